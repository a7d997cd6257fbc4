# Sourced by callgrind.sh and callgrind_server.sh: picks the command-line form of a FILTER
# that selects exactly one case of a bench binary.
#
# A bench runs every case whose name contains each of its arguments. The filter is tried
# first as words ("1MiB single 16KiB" selects "… 1MiB event single line (16KiB reads)"),
# then, if that selects several cases, as one phrase ("blocking 64B legacy" as words also
# selects "blocking 8 in flight 64B legacy"; as a phrase, only the sequential case). Sets
# the array `case_args`; fails, listing what matched, unless exactly one case is left.
# Each try is one timed operation per case, outside valgrind.

# Names of the cases that `$bin` runs with these arguments.
cases_of() {
    MCP_BENCH_ITERS=1 "$bin" "$@" 2>/dev/null | grep -E '^  [^ ].* n=[0-9]' |
        sed -E 's/^  (.*[^ ]) +n=[0-9]+ .*/\1/' || true
}

select_one_case() {
    local filter=$1 found
    # shellcheck disable=SC2206 # the filter is split into words on purpose
    case_args=($filter)
    found=$(cases_of "${case_args[@]}")
    if [[ $(grep -c . <<<"$found") -gt 1 ]]; then
        case_args=("$filter")
        local phrase
        phrase=$(cases_of "${case_args[@]}")
        [[ -n "$phrase" ]] && found=$phrase
    fi
    case $(grep -c . <<<"$found") in
        1) return 0 ;;
        0) echo "no case of $(basename "$bin") matched \"$filter\" (run the bench to see the case names)" >&2 ;;
        *) printf '"%s" selects several cases; name one:\n%s\n' "$filter" "$found" >&2 ;;
    esac
    return 1
}
