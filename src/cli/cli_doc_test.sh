#!/usr/bin/env bash
# docs/cli.md documents every subcommand and flag: for each command path, the doc has a
# "### seedance PATH" section and every flag `seedance help PATH` lists appears in it.
# Regenerate the reference with tools/gen_cli_reference.sh when this fails.
# Usage: cli_doc_test.sh PATH/TO/seedance PATH/TO/docs/cli.md
set -u
bin="$1"
doc="$2"
pass=0
fail=0
section() {  # the text of "### seedance $1" up to the next heading
  awk -v h="### seedance $1" '$0 == h {f=1; next} f && /^#/ {exit} f {print}' "$doc"
}
for c in simulate profile analyze serve-sim costmodel model train clock bench server node-agent cache experiment get apply delete explain cordon uncordon version help completion; do
  paths=("$c")
  for s in $("$bin" help "$c" | awk '/^Subcommands:/{f=1;next} f && /^  [a-z]/{print $1} f && /^$/{f=0}'); do
    paths+=("$c $s")
  done
  for p in "${paths[@]}"; do
    text=$(section "$p")
    if [[ -z "$text" ]]; then
      echo "FAIL docs/cli.md has no section '### seedance $p'"; fail=$((fail + 1)); continue
    fi
    # shellcheck disable=SC2086
    for flag in $("$bin" help $p | grep -oE '(^|[ ,])--[a-z][a-z0-9-]*' | tr -d ' ,' | sort -u); do
      if ! grep -q -- "$flag" <<<"$text"; then
        echo "FAIL seedance $p: $flag is not documented in docs/cli.md"; fail=$((fail + 1))
      else
        pass=$((pass + 1))
      fi
    done
  done
done
echo "cli_doc: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
