"""HOLLM: region-partitioned bandit search with LLM (or LLM-free) candidate proposals.

See :class:`~optiforge.agents.hollm.agent.HOLLMAgent`.
"""

from optiforge.agents.hollm.agent import HOLLMAgent, HOLLMConfig

__all__ = ["HOLLMAgent", "HOLLMConfig"]
