#!/usr/bin/env bash
#===- expect_report.sh - A sanitizer must report an injected bug -----------===#
#
#   expect_report.sh SOURCE REPORT MARKER[,MARKER...] -- PROGRAM [ARGS...]
#
# Runs PROGRAM and passes only if it fails and its output holds REPORT (an
# extended regex, e.g. "ThreadSanitizer: data race") and, for each MARKER,
# SOURCE's file name and the line that carries the comment `// @MARKER`
# ("InjectedBugs.cu:42"): the report names the line of the bug. Prints the
# program's output either way.
#
#===----------------------------------------------------------------------===#
set -u
if [ $# -lt 5 ] || [ "$4" != "--" ]; then
  echo "usage: expect_report.sh SOURCE REPORT MARKER[,MARKER...] -- PROGRAM [ARGS...]" >&2
  exit 2
fi
source=$1 report=$2 markers=$3
shift 4

output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
echo "expect_report.sh: exit status $status"

ok=1
if [ "$status" -eq 0 ]; then
  echo "expect_report.sh: the program succeeded; the bug went unreported" >&2
  ok=0
fi
if ! printf '%s\n' "$output" | grep -Eq "$report"; then
  echo "expect_report.sh: no '$report' in the output" >&2
  ok=0
fi
name=$(basename "$source")
IFS=, read -ra list <<<"$markers"
for marker in "${list[@]}"; do
  line=$(grep -n "// @$marker\$" "$source" | cut -d: -f1)
  if [ -z "$line" ]; then
    echo "expect_report.sh: no '// @$marker' in $source" >&2
    exit 2
  fi
  if ! printf '%s\n' "$output" | grep -q "$name:$line\b"; then
    echo "expect_report.sh: the report does not name $name:$line (@$marker)" >&2
    ok=0
  fi
done
[ "$ok" -eq 1 ] && echo "expect_report.sh: reported as expected"
[ "$ok" -eq 1 ]
