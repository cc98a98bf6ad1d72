"""The tool rule: usage docs for a recently used CLI are excluded, gotchas are kept."""

from __future__ import annotations

from memoryd.select.candidates import Candidate
from memoryd.select.tool_rules import is_tool_usage_doc, tool_usage_docs


def mem(filename: str, name: str, description: str, type_: str | None, body: str = "") -> Candidate:
    return Candidate(filename, name, description, type_, body, 0.0)


USAGE = mem(
    "reference_helm_charts.md",
    "Working with helm charts",
    "Usage doc for helm: where chart values live and how to render a release locally",
    "reference",
    "- Render: `helm template addons ./charts/addons`",
)
GOTCHA = mem(
    "feedback_helm_upgrade_gotcha.md",
    "Never helm upgrade by hand",
    "Gotcha for helm: manual upgrades fight the GitOps controller and get reverted",
    "feedback",
)
OTHER = mem(
    "reference_grafana.md",
    "Grafana dashboards",
    "Which dashboards to open for latency and error-rate alerts",
    "reference",
)


def test_usage_doc_for_the_tool_is_detected() -> None:
    assert is_tool_usage_doc(USAGE, "helm")


def test_gotcha_about_the_tool_is_not_a_usage_doc() -> None:
    assert not is_tool_usage_doc(GOTCHA, "helm")


def test_unrelated_reference_is_not_a_usage_doc() -> None:
    assert not is_tool_usage_doc(OTHER, "helm")
    assert not is_tool_usage_doc(USAGE, "kubectl")


def test_builtin_tools_exclude_nothing() -> None:
    cands = [USAGE, GOTCHA, OTHER]
    assert tool_usage_docs(cands, ["Read", "Bash", "mcp__github__create_pull_request"]) == set()


def test_tool_usage_docs_collects_docs_for_every_recent_cli() -> None:
    assert tool_usage_docs([USAGE, GOTCHA, OTHER], ["Bash", "helm"]) == {"reference_helm_charts.md"}


def test_body_commands_identify_a_doc_whose_header_omits_the_tool() -> None:
    doc = mem(
        "reference_screenshot_tests.md",
        "Screenshot tests",
        "How screenshot tests are organised, verified and where golden images live",
        "reference",
        "- Verify: `./gradlew verifyScreenshots`\n"
        "- Record in CI only: `./gradlew recordScreenshots`",
    )
    assert is_tool_usage_doc(doc, "gradle")
    assert not is_tool_usage_doc(doc, "adb")


def test_plugin_docs_are_not_docs_for_the_parent_tool() -> None:
    doc = mem(
        "reference_fuzzing.md",
        "Fuzzing the parser",
        "How to run the cargo-fuzz targets and turn a crash into a regression test",
        "reference",
        "- `cargo fuzz run parse_query`",
    )
    assert not is_tool_usage_doc(doc, "cargo")


def test_hyphenated_tool_names_match_their_short_form() -> None:
    doc = mem(
        "reference_nextest_profiles.md",
        "nextest profiles",
        "Usage doc for cargo-nextest: profiles, retries and filters",
        "reference",
    )
    assert is_tool_usage_doc(doc, "cargo-nextest")
    assert not is_tool_usage_doc(doc, "cargo")
