# health.sh — sourced by the benchmark scripts (bash): health PORT is true when GET /health on 127.0.0.1:PORT
# answers 200 (bash's /dev/tcp: no curl needed).
health() {
    local line
    { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
    printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    IFS= read -r -t 5 line <&3 || line=""
    exec 3<&-
    [[ $line == "HTTP/1."?" 200"* ]]
}
