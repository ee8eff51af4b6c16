FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY scripts ./scripts
COPY clients/python ./clients/python
COPY policies ./policies
COPY values ./values
COPY structured_memory ./structured_memory
COPY unstructured_memory ./unstructured_memory
COPY sandbox ./sandbox
COPY sdk ./sdk
COPY service ./service
RUN pip install --no-cache-dir ./clients/python .
# the wordvectors embedder's table, parsed once here rather than at every start
ENV DUALTRACK_CACHE_DIR=/app/.cache
RUN python -c "from unstructured_memory.embedders.word_table import load_word_table as f; f()"
USER nobody
EXPOSE 8000
CMD ["dualtrack", "serve", "--host", "0.0.0.0", "--port", "8000"]
