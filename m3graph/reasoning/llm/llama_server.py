"""llama-cpp-python's OpenAI-compatible server, started safely for this hardware.

`python -m m3graph.reasoning.llm.llama_server --model FILE.gguf ...` takes the same arguments as
`python -m llama_cpp.server`; it only turns ggml's extra CPU buffer types off first (see llama_local.py: they
crashed every decode with SIGSEGV on this VM's AMX Xeon) and sets OMP_WAIT_POLICY=PASSIVE unless set. Point the
`openai` backend at it (`M3GRAPH_LLM__<ROLE>__BACKEND=openai`, `__BASE_URL=http://HOST:PORT/v1`).
"""

from __future__ import annotations

import runpy

from m3graph.reasoning.llm.llama_local import disable_extra_buffers


def main() -> None:
    disable_extra_buffers()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
