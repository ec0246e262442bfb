"""torch helpers: publish a module's parameters by name, pull into them in place.

torch is imported only when one of these is called (``import tensorhub`` never imports it)::

    import tensorhub.torch as tht
    tht.publish_module(hub, "policy", step, model)          # trainer
    tht.pull_into_module(hub, "policy", model)              # rollout: fills model's tensors

Tensors must be CPU and contiguous (bf16 included); ``state_dict()`` names are the tensor names.
"""

from __future__ import annotations

from typing import Any

from ._hub import Group, Hub, PullResult, VersionArg


def module_tensors(module_or_state_dict: Any) -> dict[str, Any]:
    """name -> tensor (sharing the module's storage) from an ``nn.Module`` or a state_dict."""
    import torch  # noqa: F401 - fails here, with torch's own message, when torch is absent

    sd = module_or_state_dict.state_dict() if hasattr(module_or_state_dict, "state_dict") else module_or_state_dict
    return {name: t.detach() for name, t in sd.items()}


def publish_module(hub: Hub, model: str, version: int, module_or_state_dict: Any,
                   group: Group | None = None) -> None:
    """Publishes every tensor of the module / state_dict by reference (the module must not change
    until ``hub.unpublish(model, version)``)."""
    hub.publish(model, version, module_tensors(module_or_state_dict), group=group)


def pull_into_module(hub: Hub, model: str, module_or_state_dict: Any, version: VersionArg = "latest",
                     **kwargs: Any) -> PullResult:
    """Pulls ``version`` into the module's tensors in place (dtype and shape must match)."""
    import torch

    with torch.no_grad():
        return hub.pull(model, version, into=module_tensors(module_or_state_dict), **kwargs)
