"""What makes the HTTP service safe to share: operator configuration, the request guard, offered LLMs.

- :mod:`~optiforge.platform.service.config`: :class:`ServiceLimits` (every bound, one place)
  and the configuration file / ``serve`` options that set them and the offered LLM backends.
- :mod:`~optiforge.platform.service.guard`: the ASGI middleware that authenticates and caps a
  request before its body is read, and the uvicorn settings that bound connections.
- :mod:`~optiforge.platform.service.llms`: the LLM backends tenants pick by name.
"""

from optiforge.platform.service.config import (
    OfferedLLM,
    ServiceConfig,
    ServiceLimits,
    build_config,
    load_config,
)

__all__ = ["OfferedLLM", "ServiceConfig", "ServiceLimits", "build_config", "load_config"]
