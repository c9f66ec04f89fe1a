#!/usr/bin/env bash
# Regenerates the "Command reference" part of docs/cli.md from the binary's own --help, so the
# reference lists every subcommand and flag exactly as `seedance help CMD` prints them.
# Usage: tools/gen_cli_reference.sh [PATH/TO/seedance] [DOC]   (default build/src/cli/seedance)
# src/cli/cli_doc_test.sh checks that every flag of every command appears in the doc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin="${1:-build/src/cli/seedance}"
doc="${2:-docs/cli.md}"
begin='<!-- BEGIN GENERATED REFERENCE (tools/gen_cli_reference.sh) -->'
end='<!-- END GENERATED REFERENCE -->'

# Command paths: every subcommand, and the subcommands of those that have them.
paths=()
for c in simulate profile analyze serve-sim costmodel model train clock bench server node-agent cache experiment get apply delete explain cordon uncordon version help completion; do
  paths+=("$c")
  subs=$("$bin" help "$c" | awk '/^Subcommands:/{f=1;next} f && /^  [a-z]/{print $1} f && /^$/{f=0}')
  for s in $subs; do paths+=("$c $s"); done
done

ref=$(mktemp)
trap 'rm -f "$ref"' EXIT
{
  echo "$begin"
  for p in "${paths[@]}"; do
    echo
    echo "### seedance $p"
    echo
    echo '```text'
    # shellcheck disable=SC2086
    "$bin" help $p | sed -e 's/[[:space:]]*$//'
    echo '```'
  done
  echo
  echo "$end"
} >"$ref"

python3 - "$doc" "$ref" "$begin" "$end" <<'PY'
import sys
doc, ref, begin, end = sys.argv[1:5]
text = open(doc, encoding="utf-8").read()
new = open(ref, encoding="utf-8").read().rstrip("\n")
if begin in text and end in text:
    head = text[: text.index(begin)]
    tail = text[text.index(end) + len(end):]
    text = head + new + tail
else:
    text = text.rstrip("\n") + "\n\n" + new + "\n"
tmp = doc + ".tmp"
open(tmp, "w", encoding="utf-8").write(text)
import os
os.replace(tmp, doc)
PY
echo "gen_cli_reference: wrote ${#paths[@]} command sections into $doc"
