#!/usr/bin/env bash
# The HTTP API against its own OpenAPI description: schemathesis (every check) against a live
# agent on 127.0.0.1, seeded so that a failure replays. It fails on any check's failure, on a 5xx,
# and when the agent did not survive the run or stop cleanly. A minute or two on 2 cores.
#
#   Tools/test-api-schema.sh
#   ARCUS_SCHEMATHESIS_SEED=N Tools/test-api-schema.sh       another seed (default 1)
#   ARCUS_SCHEMATHESIS_EXAMPLES=N Tools/test-api-schema.sh   cases per operation and phase (default 500)
#   ARCUS_BIN=PATH                                           the arcus binary (default .build/debug/arcus)
#
# schemathesis lives in a venv of its own under ~/.cache/arcus (XDG_CACHE_HOME), made on first use.
set -euo pipefail
cd "$(dirname "$0")/.."

version=4.32.5
seed="${ARCUS_SCHEMATHESIS_SEED:-1}"
examples="${ARCUS_SCHEMATHESIS_EXAMPLES:-500}"
arcus="${ARCUS_BIN:-.build/debug/arcus}"
[ -x "$arcus" ] || { echo "error: no $arcus: swift build first (or ARCUS_BIN=PATH)" >&2; exit 1; }

# A venv's scripts name its path, so it is made where it stays; the marker says pip finished.
venv="${XDG_CACHE_HOME:-$HOME/.cache}/arcus/schemathesis-$version"
if [ ! -f "$venv/.installed" ]; then
    echo "== installing schemathesis $version into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv" || { echo "error: python3 -m venv failed: run Tools/install-deps.sh" >&2; exit 1; }
    "$venv/bin/pip" install -q "schemathesis==$version"
    touch "$venv/.installed"
fi

tmp="$(mktemp -d)"
agent=""
agent_status=0
stop_agent() {  # SIGTERM, SIGKILL after 10 s; its exit status in agent_status
    [ -n "$agent" ] || return 0
    kill -TERM "$agent" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$agent" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$agent" 2>/dev/null || kill -KILL "$agent"
    wait "$agent" || agent_status=$?
    agent=""
}
trap 'stop_agent; rm -rf "$tmp"' EXIT

# The in-process loopback transport listens nowhere; XDG_STATE_HOME keeps the agent's copy of its
# token out of the user's ~/.local/state.
echo "== starting an agent on 127.0.0.1 ($arcus)"
XDG_STATE_HOME="$tmp/state" "$arcus" agent --data "$tmp/data" --http 127.0.0.1:0 --transports loopback \
    --name schemathesis </dev/null >"$tmp/ready" 2>"$tmp/agent.log" &
agent=$!
ready() { [ -s "$tmp/ready" ] && jq -e .token_file "$tmp/ready" >/dev/null 2>&1; }  # a whole line
for _ in $(seq 1 600); do
    ready && break
    kill -0 "$agent" 2>/dev/null || { echo "error: the agent exited at start; its log:" >&2; cat "$tmp/agent.log" >&2; exit 1; }
    sleep 0.1
done
ready || { echo "error: the agent was not ready within 60 s; its log:" >&2; tail -n 20 "$tmp/agent.log" >&2; exit 1; }
url="$(jq -r .http "$tmp/ready")"
token_file="$(jq -r .token_file "$tmp/ready")"
token="$(cat "$token_file")"

# - Statements, queries and observed SELECTs are any string to the schema (it cannot hold DQL's
#   grammar), so random text is schema-valid and the agent rightly answers 400:
#   positive_data_acceptance takes 400 on those three operations, and keeps its defaults elsewhere.
# - Half the DQL drawn comes from a few real statements, else execute and observe only ever meet
#   random text and never answer 200 (whose bodies response_schema_conformance then checks).
# - An observe stream never ends by itself: one event (the current result) is enough.
cat > "$tmp/schemathesis.toml" <<'EOF'
max-stream-events = 1

[dictionaries]
dql = { values = [
    "SELECT * FROM cars", "SELECT * FROM cars WHERE color = 'red'", "SHOW ALL",
    "INSERT INTO cars DOCUMENTS ({'color': 'blue'})",
    "UPDATE cars SET color = 'red' WHERE color = 'blue'", "DELETE FROM cars WHERE color = 'red'",
] }

[parameters]
"body.statement" = { dictionary = "dql", probability = 0.5 }
"body.query" = { dictionary = "dql", probability = 0.5 }
"query.q" = { dictionary = "dql", probability = 0.5 }

[[operations]]
include-operation-id = ["execute", "observe", "subscribe"]
checks.positive_data_acceptance.expected-statuses = ["2XX", 400]
EOF

# One worker: the agent needs the other core. No example database, so a seed means one run; the
# request timeout turns a request that hangs into a failure. The cassette is read for 5xx below.
# Attachment bodies need no bound: schemathesis draws a few hundred bytes at most (331 seen).
echo "== schemathesis $version against $url (seed $seed, $examples examples per operation)"
status=0
(cd "$tmp" && "$venv/bin/schemathesis" --config-file schemathesis.toml run "$url/v1/openapi.json" \
    --header "Authorization: Bearer $token" --checks all --seed "$seed" --max-examples "$examples" \
    --workers 1 --generation-database none --request-timeout 20 --no-color \
    --report vcr --report-vcr-path "$tmp/cassette.yaml") | tee "$tmp/output" || status=$?

# not_a_server_error already fails on any 5xx; this says so even where a check is configured away.
if grep -Eq "^ +code: '5[0-9][0-9]'" "$tmp/cassette.yaml" 2>/dev/null; then
    echo "error: the agent answered 5xx:" >&2
    grep -Eo "^ +code: '5[0-9][0-9]'" "$tmp/cassette.yaml" | sort | uniq -c >&2
    status=1
fi
# The agent must have come through alive, still answer, and stop cleanly (status 0 on SIGTERM).
answering=yes
"$arcus" status --agent "$url" --token-file "$token_file" --json >/dev/null || answering=no
stop_agent
if [ "$answering" = no ] || [ "$agent_status" != 0 ]; then
    echo "error: the agent did not come through (answered GET /v1/status: $answering; exit status: $agent_status); its log ends:" >&2
    tail -n 30 "$tmp/agent.log" >&2
    status=1
fi

summary="$(grep -E '^=+ .* in [0-9.]+s =+$' "$tmp/output" | tail -n 1 | sed -E 's/^=+ (.*) =+$/\1/')"
echo "== schemathesis (seed $seed): ${summary:-no summary line}"
exit "$status"
