"""Online GRPO for the evolution agent: the learner and its adapter-version format.

The loss itself is in :mod:`optiforge.optim.policy_gradient`, usable by any trainer.
"""

from optiforge.agents.evolution.grpo.learner import GRPOLearner

__all__ = ["GRPOLearner"]
