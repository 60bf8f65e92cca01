"""Which of a study's cells a real Flower deployment could not run as timed: a variant's replies that Flower's
object-push session would drop on one of the study's profiles (:mod:`fedbw.flower_limits`).

Why per profile: a study runs each variant once and re-times it on every profile, so a variant whose own
links are fast can still be re-timed on a profile whose uplink cannot carry its masked vector; that row's
round time would then describe a round Flower never finishes.
"""

from __future__ import annotations

from collections import Counter

from fedbw.config.study import Study
from fedbw.engines.cohorts import planned
from fedbw.flower_limits import lost_replies
from fedbw.links import profile_link


def study_lost_replies(study: Study) -> list[str]:
    """One sentence per (variant, profile, stage) whose replies Flower would drop, before anything runs."""
    out = []
    for v in study.variants:
        plan = planned(v.config)
        exchanges = plan.predicted_exchanges(1)
        for profile in study.profiles:
            uplinks = Counter({profile_link(profile).up_payload_mbps: len(plan.clients)})
            out += [f"variant {v.name} on {profile}: {lost.sentence(len(plan.clients))}"
                    for lost in lost_replies(exchanges, uplinks)]
    return out
