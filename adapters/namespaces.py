"""Store namespaces onto the user scope, and the lifecycle policy of each prefix.

A layout such as ``("memories", "{user_id}")`` says where the user stands in a
namespace: ``("memories", "buyer-001", "prefs")`` is user ``buyer-001``'s
``("memories", "{user_id}", "prefs")``. The *relative* form (the user segment
written ``{user_id}``) is what is stored beside a memory and what policy
prefixes are written in, so no user id is ever copied into a memory's metadata.
Pure rules, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from adapters.errors import NamespaceWithoutUser
from policies.errors import InvalidField, PolicyMissing
from policies.lifecycle import LifecyclePolicy, require_policy
from policies.pii import mask_pii

__all__ = ["USER", "NamespaceLayout", "PolicyByPrefix", "check_label"]

USER = "{user_id}"
"""The user segment of a layout or a policy prefix."""

PolicyByPrefix = LifecyclePolicy | Mapping[tuple[str, ...], LifecyclePolicy]
"""One policy for every namespace, or one per relative namespace prefix (longest wins)."""


def check_label(label: object, field: str) -> str:
    """``label`` if it is a non-empty string free of personal data (labels and keys are
    stored beside the memory, where personal data would be masked), else :class:`InvalidField`."""
    if not isinstance(label, str) or not label:
        raise InvalidField(f"{field} must be a non-empty string", field=field)
    if mask_pii(label)[1]:
        raise InvalidField(f"{field} must not hold personal data", field=field)
    return label


@dataclass(frozen=True)
class NamespaceLayout:
    """Where the user segment stands in a namespace, and each prefix's policy."""

    template: tuple[str, ...]
    policies: tuple[tuple[tuple[str, ...], LifecyclePolicy], ...]
    """``(relative prefix, policy)``, longest prefix first."""

    @classmethod
    def build(cls, template: Sequence[str], lifecycle_policy: PolicyByPrefix) -> NamespaceLayout:
        """Check ``template`` (exactly one ``{user_id}`` segment) and the policy map (each
        prefix in relative form); :class:`InvalidField` or :class:`PolicyMissing` otherwise."""
        labels = tuple(template)
        if labels.count(USER) != 1:
            raise InvalidField(f"namespace must hold one {USER!r} segment", field="namespace")
        for label in labels:
            check_label(label, "namespace")
        user_at = labels.index(USER)
        if isinstance(lifecycle_policy, Mapping):
            if not lifecycle_policy:
                raise InvalidField("lifecycle_policy names no prefix", field="lifecycle_policy")
            pairs = []
            for labels_of, policy in lifecycle_policy.items():
                prefix = tuple(labels_of)
                if len(prefix) > user_at and prefix[user_at] != USER:
                    raise InvalidField(
                        f"a policy prefix names the user as {USER!r}", field="lifecycle_policy"
                    )
                pairs.append((prefix, require_policy(policy)))
            pairs.sort(key=lambda pair: -len(pair[0]))
            return cls(labels, tuple(pairs))
        return cls(labels, (((), require_policy(lifecycle_policy)),))

    @property
    def user_at(self) -> int:
        """The index of the user segment."""
        return self.template.index(USER)

    def user_of(self, namespace: Sequence[str]) -> str:
        """The user a namespace (or a search prefix) belongs to; :class:`NamespaceWithoutUser`
        when it stops before the user segment or its labels differ from the layout's."""
        labels = tuple(namespace)
        if len(labels) <= self.user_at:
            raise NamespaceWithoutUser(
                f"the namespace must reach its user segment, laid out as {self.template}",
                field="namespace",
            )
        for position, (label, expected) in enumerate(zip(labels, self.template, strict=False)):
            if position != self.user_at and label != expected:
                raise NamespaceWithoutUser(
                    f"the namespace does not follow the layout {self.template}", field="namespace"
                )
        user = labels[self.user_at]
        if not isinstance(user, str) or not user or user in (USER, "*"):
            raise NamespaceWithoutUser("the namespace names no user", field="namespace")
        for position, label in enumerate(labels):
            if position != self.user_at:
                check_label(label, "namespace")
        return user

    def relative(self, namespace: Sequence[str]) -> tuple[str, ...]:
        """The namespace with its user segment written ``{user_id}`` (checked first)."""
        self.user_of(namespace)
        labels = list(namespace)
        labels[self.user_at] = USER
        return tuple(labels)

    def absolute(self, relative: Sequence[str], user_id: str) -> tuple[str, ...]:
        """The namespace of ``relative`` for ``user_id``."""
        labels = list(relative)
        labels[self.user_at] = user_id
        return tuple(labels)

    def policy_for(self, relative: Sequence[str]) -> LifecyclePolicy:
        """The policy of the longest prefix of ``relative``; :class:`PolicyMissing` if none."""
        labels = tuple(relative)
        for prefix, policy in self.policies:
            if labels[: len(prefix)] == prefix:
                return policy
        raise PolicyMissing(f"no lifecycle_policy prefix covers the namespace {labels}")
