"""General software-engineering paraphrase groups: each member maps to its group's concept
token, which matches at a discount. Only the :data:`EARNED` groups are used in queries; the
others are candidates the quality bench tests again.
"""

from __future__ import annotations

from memoryd.select._text import split_words, stem

_GROUPS = """
flaky intermittent intermittently random randomly nondeterministic sporadic sometimes flake
slow slowness latency performance perf fast faster speed sluggish timeout
deploy deployment release ship rollout rollback promote launch
db database postgres postgresql sql mysql sqlite
query queries sql
test tests testing spec unittest suite
mock mocks mocking fake fakes stub stubs double
fail failing failure fails broken break breaks error errors
crash crashes panic panics exception exceptions abort
reject rejected decline declined denied refuse refused
charge charged payment payments pay paid billing bill card
retry retries again reattempt backoff
money amount amounts price prices currency cent cents decimal rounding
config configuration configure settings setting options
secret secrets credential credentials password token tokens key keys
permission permissions access role roles iam privilege
log logs logging logger
upgrade bump update updates version versions
delete remove drop purge wipe erase
schema migration migrations column columns table tables alter
timezone timezones utc tz
date dates time timestamp timestamps datetime
cache caching cached memoize
queue queues broker worker workers task tasks job jobs
schedule scheduled cron nightly periodic daily hourly
container containers docker image
cluster kubernetes k8s pod pods node nodes
alert alerts alarm page paging oncall incident
dashboard dashboards metrics monitoring graph charts
feature flag flags toggle toggles
benchmark benchmarks bench profiling profile
snapshot snapshots golden screenshot screenshots
dependency dependencies dep deps crate crates package packages library libraries
build builds compile compiles compilation
lint linter linting style format formatting formatter
type types typing typed typescript
null nil none nullable optional
sync synchronization synchronize offline
photo photos image images picture pictures
device devices phone tablet tablets mobile android
pr prs review reviewer reviewers merge
commit commits branch branches rebase squash
ci pipeline pipelines workflow workflows actions
prod production live
staging stage preprod
local locally laptop localhost
environment environments env envs
customer customers user users client clients
order orders purchase purchases checkout cart
refund refunds return returns
invoice invoices receipt tax vat
email emails mail notification notifications
endpoint endpoints api route routes handler
webhook webhooks callback callbacks event events
auth authentication login logged sign session sessions
index indexes reindex search
duplicate duplicates duplicated twice idempotent idempotency
lock locks locking deadlock concurrency race
memory oom leak
storage disk volume volumes bucket s3
network networking vpc subnet dns
certificate certificates tls ssl https
backfill backfills reprocess rerun
parse parser parsing parsers
cli command commands flag
docs documentation readme
freeze frozen moratorium
deadline due
owner owns ownership team contact
"""


def _build() -> dict[str, tuple[str, ...]]:
    """Map each stemmed member to the concept tokens (``~`` + label) of its groups."""
    out: dict[str, list[str]] = {}
    for line in _GROUPS.strip().splitlines():
        concept = f"~{line.split()[0]}"
        for word in line.split():
            for w in split_words(word):
                members = out.setdefault(stem(w), [])
                if concept not in members:
                    members.append(concept)
    return {k: tuple(v) for k, v in out.items()}


GROUP_LABELS: tuple[str, ...] = tuple(line.split()[0] for line in _GROUPS.strip().splitlines())
"""Every candidate group, named by its first word."""

EARNED: frozenset[str] = frozenset(
    [
        "auth",
        "backfill",
        "cli",
        "config",
        "crash",
        "customer",
        "deploy",
        "duplicate",
        "endpoint",
        "environment",
        "fail",
        "flaky",
        "network",
        "order",
        "queue",
        "refund",
        "staging",
        "sync",
        "webhook",
    ]
)
"""Groups the fit on every development project kept (bench/select_quality.py)."""

CONCEPTS: dict[str, tuple[str, ...]] = _build()
"""Stemmed word -> concept tokens shared with its paraphrases."""
