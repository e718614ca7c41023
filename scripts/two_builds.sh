# Sourced by the scripts that compare two builds of eqds-sim; not run on its own.
#
# two_builds SCRIPT ARGS...: prints SCRIPT's header comment and exits 2 unless ARGS
# start with two builds; otherwise sets `base` and `new` to their full paths.
two_builds() {
  local script=$1
  shift
  if [ $# -lt 2 ]; then
    sed -n '2,/^[^#]/{/^#/p}' "$script" | sed 's/^# \{0,1\}//'
    exit 2
  fi
  base=$(realpath "$1")
  new=$(realpath "$2")
}
