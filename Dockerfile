FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY policies ./policies
COPY structured_memory ./structured_memory
COPY unstructured_memory ./unstructured_memory
COPY sdk ./sdk
RUN pip install --no-cache-dir .
USER nobody
CMD ["dualtrack", "--help"]
