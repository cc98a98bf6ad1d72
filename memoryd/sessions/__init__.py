"""Session memory files: the ``save`` format and prior-session context briefs.

``format`` validates ``save`` params and renders/reads the session file;
``brief`` builds the deterministic, cited context brief. Both are pure: the
daemon's socket layer does the I/O around them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd._lazy import lazy_getattr

if TYPE_CHECKING:
    from memoryd.sessions._findings import Finding, Source
    from memoryd.sessions._sections import Entry, SessionSections, parse_sections
    from memoryd.sessions.brief import (
        Brief,
        SessionDoc,
        build_brief,
        estimate_tokens,
        no_context_message,
        unavailable_message,
    )
    from memoryd.sessions.format import (
        SCHEMA_VERSION,
        SessionInput,
        render_session,
        resume_line,
        session_filename,
        session_input_from_file,
        validate_save_params,
    )

# Where each public name lives. They are imported on first use (PEP 562), so
# the Claude Code hook can read a session's sections without loading the
# brief builder, which pulls in the indexer and SQLite.
_HOMES = {
    "Finding": "_findings",
    "Source": "_findings",
    "Entry": "_sections",
    "SessionSections": "_sections",
    "parse_sections": "_sections",
    "Brief": "brief",
    "SessionDoc": "brief",
    "build_brief": "brief",
    "estimate_tokens": "brief",
    "no_context_message": "brief",
    "unavailable_message": "brief",
    "SCHEMA_VERSION": "format",
    "SessionInput": "format",
    "render_session": "format",
    "resume_line": "format",
    "session_filename": "format",
    "session_input_from_file": "format",
    "validate_save_params": "format",
}


__getattr__ = lazy_getattr(__name__, _HOMES)


__all__ = [
    "SCHEMA_VERSION",
    "Brief",
    "Entry",
    "Finding",
    "SessionDoc",
    "SessionInput",
    "SessionSections",
    "Source",
    "build_brief",
    "estimate_tokens",
    "no_context_message",
    "parse_sections",
    "render_session",
    "resume_line",
    "session_filename",
    "session_input_from_file",
    "unavailable_message",
    "validate_save_params",
]
