"""What an audit's trials will take, estimated from the audit's own run, and the refusal of a run
whose estimate is over its time budget (``time_budget``, ``--time-budget``).

Where every trial is trainings run one at a time (retrain mode on the loop path: a method without
batched training, such as the caller's own code), a trial costs what the audit's own run cost: one
learning on D, one unlearning and one retraining on D \\ Z (``timings.learn_s``, ``unlearn_s``,
``retrain_s``; a training costs the slower of the run's learning and retraining). The estimate is
those seconds times the models still to make (trials and shadow models, less those read back from a
run directory), divided by the workers, which are assumed to run at the audit's own speed side by
side. Batched trials (a built-in method's ``train_many``) train many models at once, far cheaper per
trial than the single timing suggests, and noise-mode trials are noise draws: no estimate is made
for them, and a time budget is not checked (the run says so in a note)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from audit.report import schema
from certify.errors import InvalidInput
from unlearners.base import Unlearner

log = logging.getLogger("unlearn_audit.cost")


def trial_cost(
    method: Unlearner, mode: str, models: int, workers: int, timings: Mapping[str, float], budget: float | None
) -> schema.TrialCost | None:
    """The estimate for ``models`` models still to make on ``workers`` workers (None where trials are
    not trainings run one at a time, or where the audit's own timings are not known)."""
    if mode != "retrain" or type(method).capabilities.batched_training or not timings:
        if budget is not None:
            log.info(
                "time_budget %g s not checked: no estimate for %s trials (only trials that are trainings "
                "run one at a time are estimated)",
                budget,
                "batched" if mode == "retrain" else f"{mode}-mode",
            )
        return None
    # the slower of the audit's own two trainings: with production weights (original=) nothing learned on D,
    # learn_s is about 0, and a mean would halve the estimate
    training = max(float(timings["learn_s"]), float(timings["retrain_s"]))
    unlearning = float(timings["unlearn_s"])
    trainings, unlearnings = 2 * int(models), int(models)
    return schema.TrialCost(
        seconds_per_training=training,
        seconds_per_unlearning=unlearning,
        trainings=trainings,
        unlearnings=unlearnings,
        workers=int(workers),
        estimated_s=(trainings * training + unlearnings * unlearning) / max(1, int(workers)),
        time_budget_s=None if budget is None else float(budget),
    )


def check_budget(cost: schema.TrialCost | None, count_field: str = "trials") -> None:
    """Refuse, before any trial, a run whose estimate is over its budget: the estimate and how it
    was made, in one sentence; ``count_field`` is the setting that chose the trial count."""
    if cost is None or cost.time_budget_s is None or cost.estimated_s <= cost.time_budget_s:
        return
    on = f", on {cost.workers} workers" if cost.workers > 1 else ""
    flag = "--" + count_field.replace("_", "-")
    raise InvalidInput(
        "time_budget",
        f"at least what the trials would take: about {_seconds(cost.estimated_s)} s ({cost.trainings:,} trainings x "
        f"{cost.seconds_per_training:.3g} s + {cost.unlearnings:,} unlearnings x {cost.seconds_per_unlearning:.3g} s"
        f"{on}, from this audit's own run), over the budget",
        cost.time_budget_s,
        hint=f"Lower {count_field} ({flag}) or raise time_budget (--time-budget).",
    )


def _seconds(x: float) -> str:
    """412 s, 4.1 s, 0.41 s: whole seconds from ten up, two digits below."""
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"
