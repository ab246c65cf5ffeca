#!/usr/bin/env bash
# The test command: lint, then the full pytest suite against a real Neo4j.
# Extra arguments go to pytest (e.g. scripts/test.sh -k server -x).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Idempotent: installs what a fresh machine lacks, a few seconds when everything is there.
bash scripts/setup.sh dev,embed,tasks,perception,explore,mcp
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
for path in m3graph tests bench; do
    [ -e "${path}" ] && lint_paths+=("${path}")
done
.venv/bin/ruff check "${lint_paths[@]}"

status=0
.venv/bin/python -m pytest -q --basetemp="${basetemp}" "$@" || status=$?
if [ "${status}" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that is a failure" >&2
    exit 1
fi

# Compatibility subset on Neo4j 5.26 LTS (Java 17, APOC): the store, search, identity and query plans on the line
# users with their own 5.26 servers run. Only on a full run (no pytest arguments) that passed, and only when the
# suite manages its own server (with NEO4J_URI set, that server's version is what the suite tested).
compat=(tests/test_schema.py tests/test_search.py tests/test_identity.py tests/test_query_plans.py
        tests/test_memories.py tests/test_characters.py)
if [ "${status}" -eq 0 ] && [ $# -eq 0 ] && [ -z "${NEO4J_URI:-}" ]; then
    echo "test.sh: compatibility subset on Neo4j 5.26"
    M3GRAPH_TEST_NEO4J_VERSION=5.26 .venv/bin/python -m pytest -q -p no:cacheprovider \
        --basetemp="${basetemp}/compat-5.26" "${compat[@]}" || status=$?
fi
exit "${status}"
