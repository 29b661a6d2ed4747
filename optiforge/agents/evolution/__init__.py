"""CALM-style heuristic evolution: population, prompts, parsing, rewards and the agent."""

from optiforge.agents.evolution.agent import (
    GRAFT_OPERATOR,
    TUNE_OPERATOR,
    EvolutionAgent,
    EvolutionConfig,
    Program,
    Proposal,
    TuneRequest,
)
from optiforge.agents.evolution.canonical import code_hash, normalize_code
from optiforge.agents.evolution.constants import (
    Constant,
    find_constants,
    signed_values,
    space_point,
    substitute,
    tune_space,
)
from optiforge.agents.evolution.parsing import ParsedResponse, parse_response, signature_params
from optiforge.agents.evolution.population import (
    PoolEntry,
    Population,
    diversity,
    idea_tokens,
)
from optiforge.agents.evolution.prompts import OPERATORS, build_prompt
from optiforge.agents.evolution.rewards import RewardConfig, calm_reward, relative_delta

__all__ = [
    "OPERATORS",
    "TUNE_OPERATOR",
    "GRAFT_OPERATOR",
    "Constant",
    "TuneRequest",
    "find_constants",
    "signed_values",
    "space_point",
    "substitute",
    "tune_space",
    "EvolutionAgent",
    "EvolutionConfig",
    "ParsedResponse",
    "PoolEntry",
    "Population",
    "Program",
    "Proposal",
    "RewardConfig",
    "build_prompt",
    "calm_reward",
    "code_hash",
    "diversity",
    "idea_tokens",
    "normalize_code",
    "parse_response",
    "relative_delta",
    "signature_params",
]
