# The standing benchmark's arms and their `groundcode bench run` flags, sourced by
# bench_standing_cpu.sh and bench_standing_gpu.sh (one list, so the two cannot drift).
flags() {  # the bench run flags of an arm
  case "$1" in
    baseline) echo --no-monitor;;
    monitored) echo --monitor;;
    monitored+names) echo --monitor --names;;   # the names monitor too: names read and modules imported exist (issue 40)
    monitored-no-keywords) echo --monitor --no-keywords;;   # the call monitor off (issue 41's baseline for the call kind)
    check-first) echo --monitor --names --check-first;;   # function bodies written freely, checked by ty (not the pylint that scores), rewritten from the first failing line with the monitors on (issue 41)
    monitored+vocabulary) echo --monitor --vocabulary;;   # untyped receivers held to the project's names (the default since session 9)
    monitored-no-vocabulary) echo --monitor --no-vocabulary;;   # untyped receivers free (before session 9)
    monitored@*) echo --monitor --analyzer "${1#monitored@}";;   # the monitor asking a language server (ty, zuban, pyrefly: groundcode analyzers install NAME)
    declarations) echo --no-monitor --declarations;;
    declarations+monitored) echo --monitor --declarations;;
    *) echo "error: unknown arm $1 (baseline, monitored, monitored+names, monitored-no-keywords, check-first, monitored+vocabulary, monitored-no-vocabulary, monitored@SERVER, declarations, declarations+monitored)" >&2; exit 2;;
  esac
}
