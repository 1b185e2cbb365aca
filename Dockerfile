# One image for web, worker and beat (docker-compose.yml picks the command).
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
WORKDIR /app
# TORCH_INDEX_URL: point pip at a CPU-only wheel index so torch==2.13.0 is not a CUDA build.
ARG TORCH_INDEX_URL=""
RUN pip install --no-cache-dir torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN useradd --create-home memory && mkdir -p /app/var && chown memory /app/var
USER memory
EXPOSE 8000
CMD ["gunicorn", "memoryapp.wsgi:application", "--config", "python:memoryapp.gunicorn_config", "--bind", "0.0.0.0:8000"]
