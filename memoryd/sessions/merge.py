"""A second ``save`` of the same session: keep what the first one recorded and this one does not.

The session file is named by its minute, so two saves in the same minute (or
two saves that pass the same ``session``) write one file. Overwriting would
lose the steps and decisions the earlier save recorded; refusing would make
every checkpoint save of a workflow (the file manager's "update after each
checkpoint") fail. So the newer save is laid over the older one:

* a field the new save gives wins (a step id it restates gets its new text);
* steps, key decisions and approved checkpoints only the older save has are
  kept, in their order, before the new ones;
* an empty summary or active state keeps the older text;
* ``replace`` (``memoryd save --replace``) writes the new save alone, as the
  specification's plain overwrite does.

What was kept is reported (``kept`` in the reply), so the caller sees the
merge instead of a bare ``updated``. Frontmatter fields the new save leaves
unset (mode, status, checkpoints' decisions, ...) are carried over by
:func:`~memoryd.sessions.format.render_session` either way.
"""

from __future__ import annotations

from dataclasses import replace

from memoryd.replies import Kept
from memoryd.sessions.format import SessionInput


def merge(new: SessionInput, old: SessionInput) -> tuple[SessionInput, Kept]:
    """``new`` laid over ``old``, and what of ``old`` survives only because it was kept."""
    kept_steps = [step for step in old.steps_completed if step not in new.steps_completed]
    kept_decisions = [d for d in old.key_decisions if d not in new.key_decisions]
    kept_checkpoints = [c for c in old.checkpoints_approved if c not in new.checkpoints_approved]
    keep_summary = not new.session_summary.strip() and bool(old.session_summary.strip())
    keep_active = not new.active_state.strip() and bool(old.active_state.strip())
    merged = replace(
        new,
        steps_completed={**old.steps_completed, **new.steps_completed},
        key_decisions=[*kept_decisions, *new.key_decisions],
        checkpoints_approved=[*kept_checkpoints, *new.checkpoints_approved],
        session_summary=old.session_summary if keep_summary else new.session_summary,
        active_state=old.active_state if keep_active else new.active_state,
    )
    kept: Kept = {
        "steps_completed": kept_steps,
        "key_decisions": len(kept_decisions),
        "checkpoints_approved": kept_checkpoints,
        "session_summary": keep_summary,
        "active_state": keep_active,
    }
    return merged, kept
