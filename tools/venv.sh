#!/bin/sh
# Usage: venv.sh KIND STAMP [VENV]. Creates the virtualenv VENV (.venv) and
# installs memoryd into it (KIND: runtime, or dev for the dev tools too) unless
# STAMP exists. One lock covers the whole set-up, so `make serve` and
# `make test` can start in either order or at the same time.
set -eu
kind=$1
stamp=$2
venv=${3:-.venv}
python=${PYTHON:-python3}
pip="$venv/bin/pip install --quiet --disable-pip-version-check"
exec 9>"$venv.lock"
if ! flock -n 9; then
	echo "memoryd: waiting for another make to finish setting up $venv"
	flock 9
fi
[ -f "$stamp" ] && exit 0
if [ ! -x "$venv/bin/pip" ]; then
	echo "memoryd: creating the virtualenv $venv"
	rm -rf "$venv"
	"$python" -m venv "$venv"
fi
if [ "$kind" = dev ]; then
	echo "memoryd: installing memoryd with the dev tools (ruff, mypy, pytest, mcp) into $venv"
	$pip -e '.[dev]'
	rm -f "$venv"/.dev-* "$venv"/.runtime-*
	touch "$stamp" "$(echo "$stamp" | sed 's/\.dev-/.runtime-/')"
else
	echo "memoryd: installing memoryd and its runtime dependencies into $venv"
	echo "memoryd: (the first time this takes 20-90 s; pip is quiet until it is done)"
	$pip -e .
	rm -f "$venv"/.runtime-*
	touch "$stamp"
fi
