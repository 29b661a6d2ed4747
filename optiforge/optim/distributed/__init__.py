"""Distributed training schemes, simulated in process or run on Ray.

- **Decentralized SGD** with scheduled communication and a single global merge (Zhu et al.,
  ICLR 2026): topologies (:class:`Gossip` with one random peer at rate ``R``, :class:`Ring`,
  :class:`Graph`, :class:`AllReduce`), communication :class:`Windows` placed early, late or
  uniformly at an equal budget, a final merge — :func:`train_decentralized`.
- **Federated learning with compression**: :class:`ADI` (agnostic DIANA: DIANA shifts, an
  optimistic server step, KL mirror ascent on the client weights capped at ``a/M``, partial
  participation) and the :func:`DIANA`, :class:`EF21`, :class:`FedAvg` baselines, with the
  :class:`RandK`, :class:`TopK`, :class:`Natural` compressors counting every bit —
  :func:`train_federated`.
- **Data**: :func:`dirichlet_partition` (non-IID, ``Dirichlet(alpha)``), :func:`synthetic_classification`.

One algorithm description, two engines: the algorithms are written against the small
:class:`Engine` protocol; :class:`LocalEngine` runs all agents in this process, vectorised
with ``torch.func.vmap``; ``optiforge.platform.distributed.RayEngine`` runs each agent in a
Ray actor (Ray is not imported here). The same seed gives the same run on both.

::

    from optiforge.optim.distributed import (LocalEngine, FlatModel, DecentralizedConfig,
        Schedule, Gossip, Windows, dirichlet_partition, train_decentralized)
    shards = dirichlet_partition(data.y_train, 16, 0.1, np.random.default_rng(0))
    cfg = DecentralizedConfig(rounds=100, schedule=Schedule(Gossip(0.2), Windows("late", 0.1)))
    result = train_decentralized(LocalEngine(), FlatModel(mlp), data, shards, cfg)
    result.final["merged_acc"], result.final["bits"]
"""

from .compressors import COMPRESSORS, Compressor, Identity, Natural, RandK, TopK, make_compressor
from .data import Dataset, dirichlet_partition, synthetic_classification
from .decentralized import DecentralizedConfig, initial_parameters, train_decentralized
from .engine import Agent, Engine, LocalEngine, client_work, make_agents
from .evaluate import RunResult, accuracy_and_loss
from .federated import (
    ADI,
    DIANA,
    EF21,
    FedAvg,
    FederatedConfig,
    FederatedMethod,
    LocalWork,
    mirror_ascent_step,
    project_capped_simplex_kl,
    train_federated,
)
from .model import (
    FlatModel,
    ShardSampler,
    agent_seeds,
    cross_entropy,
    mlp,
    sgd_steps,
    squared_error,
)
from .schedule import PLACEMENTS, Schedule, Windows
from .topology import AllReduce, Gossip, Graph, NoCommunication, Ring, Topology, metropolis

__all__ = [
    "ADI", "COMPRESSORS", "DIANA", "EF21", "PLACEMENTS", "Agent", "AllReduce", "Compressor",
    "Dataset", "DecentralizedConfig", "Engine", "FedAvg", "FederatedConfig", "FederatedMethod",
    "FlatModel", "Gossip", "Graph", "Identity", "LocalEngine", "LocalWork", "Natural",
    "NoCommunication", "RandK", "Ring", "RunResult", "Schedule", "ShardSampler", "TopK",
    "Topology", "Windows", "accuracy_and_loss", "agent_seeds", "client_work", "cross_entropy",
    "dirichlet_partition", "initial_parameters", "make_agents", "make_compressor", "metropolis", "mlp",
    "mirror_ascent_step", "project_capped_simplex_kl", "sgd_steps", "squared_error",
    "synthetic_classification", "train_decentralized", "train_federated",
]
