"""Session memory files: the ``save`` format and prior-session context briefs.

``format`` validates ``save`` params and renders/reads the session file;
``brief`` builds the deterministic, cited context brief. Both are pure: the
daemon's socket layer does the I/O around them.
"""

from __future__ import annotations

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
