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
USER nobody
EXPOSE 8000
CMD ["dualtrack", "serve", "--host", "0.0.0.0", "--port", "8000"]
