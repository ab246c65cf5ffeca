#!/usr/bin/env bash
# The test command: lint (ruff), types (mypy), then the full pytest suite against a real Neo4j.
#   scripts/test.sh            everything: tests/unit, tests/graph, tests/e2e, then the Neo4j 5.26 subset
#   scripts/test.sh --fast     ruff + mypy + tests/unit + the graph tests of the core store (a few minutes)
# Extra arguments go to pytest (e.g. scripts/test.sh -k server -x, scripts/test.sh --fast -x).
set -euo pipefail

fast=0
if [ "${1:-}" = "--fast" ]; then
    fast=1
    shift
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Idempotent: installs what a fresh machine lacks, a few seconds when everything is there.
bash scripts/setup.sh dev,embed,tasks,perception,explore,mcp,files,s3
export OMP_WAIT_POLICY=PASSIVE  # torch's spinning OpenMP threads starve the Neo4j server on 2 cores

# pytest's temp dirs (and so the session server's home) live here, so the cleanup below can find them.
basetemp=.m3graph/pytest-tmp

stop_leftover_servers() {
    # The session fixture stops its server; this only catches a pytest that was killed or crashed.
    local pid_file
    [ -d "${basetemp}" ] || return 0
    find "${basetemp}" -name m3graph.pid -print 2>/dev/null | while read -r pid_file; do
        echo "stopping leftover test server in $(dirname "${pid_file}")" >&2
        .venv/bin/python -c 'import sys
from m3graph.localserver.server import LocalNeo4j
from m3graph.settings import LocalServer, Settings
LocalNeo4j(Settings(local=LocalServer(home=sys.argv[1]))).stop()' "$(dirname "${pid_file}")" || true
    done
}

trap stop_leftover_servers EXIT
stop_leftover_servers  # from an earlier run, before pytest wipes its basetemp

lint_paths=()
for path in m3graph tests bench examples; do
    [ -e "${path}" ] && lint_paths+=("${path}")
done
.venv/bin/ruff check "${lint_paths[@]}"
# Types of the core packages (the [tool.mypy] section of pyproject.toml says which); an error fails the run.
.venv/bin/python -m mypy

# --fast: the pure tier and the graph tests of the store's core (schema, memories, search, identity, characters,
# votes, deletion, named and guarded Cypher); the perception, model, worker and browser tests are left to the full run.
fast_tests=(tests/unit tests/graph/test_schema.py tests/graph/test_cypher_files.py tests/graph/test_memories.py
            tests/graph/test_search.py tests/graph/test_identity.py tests/graph/test_characters.py
            tests/graph/test_manual_votes.py tests/graph/test_deletion.py tests/graph/test_guarded_cypher.py)

status=0
if [ "${fast}" -eq 1 ]; then
    .venv/bin/python -m pytest -q --basetemp="${basetemp}" "${fast_tests[@]}" "$@" || status=$?
    exit "${status}"
fi
.venv/bin/python -m pytest -q --basetemp="${basetemp}" "$@" || status=$?
if [ "${status}" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that is a failure" >&2
    exit 1
fi

# Compatibility subset on Neo4j 5.26 LTS (Java 17, APOC): the store, search, identity and query plans on the line
# users with their own 5.26 servers run. Only on a full run (no pytest arguments) that passed, and only when the
# suite manages its own server (with NEO4J_URI set, that server's version is what the suite tested).
compat=(tests/graph/test_schema.py tests/graph/test_search.py tests/graph/test_identity.py
        tests/graph/test_query_plans.py tests/graph/test_memories.py tests/graph/test_characters.py
        tests/graph/test_fact_versions.py tests/graph/test_guard_hostile_reads.py tests/graph/test_guard_analyst_reads.py)
if [ "${status}" -eq 0 ] && [ $# -eq 0 ] && [ -z "${NEO4J_URI:-}" ]; then
    echo "test.sh: compatibility subset on Neo4j 5.26"
    M3GRAPH_TEST_NEO4J_VERSION=5.26 .venv/bin/python -m pytest -q -p no:cacheprovider \
        --basetemp="${basetemp}/compat-5.26" "${compat[@]}" || status=$?
fi
exit "${status}"
