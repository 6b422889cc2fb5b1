# Two commands for a fresh machine:
#   make demo   install everything, generate the sample corpus and run the whole pool on it
#   make test   install everything and run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install dev bench clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/aesforge demo

test: install
	$(BIN)/pytest -q

dev: install
	$(BIN)/dagster dev

bench: install
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/dedup.py --n 5000
	$(BIN)/python bench/reddit_dump.py --size-mb 1024 --out data/bench/reddit

clean:
	rm -rf data build *.egg-info
