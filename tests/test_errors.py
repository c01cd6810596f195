"""Issue 16, "every code registry in errors.py": one condition has one name per layer, each registered."""

from __future__ import annotations

import pytest

from evidence_lib import _errors as errors
from evidence_lib._errors import CITATION_REASONS, ERROR_CODES, FINDING_CODES, SAME_CONDITION, EvidenceError

LAYERS = {"tool": ERROR_CODES, "citation": CITATION_REASONS, "finding": FINDING_CODES}


@pytest.mark.parametrize("condition", sorted(SAME_CONDITION))
def test_each_layer_names_a_condition_with_a_registered_code(condition):
    names = SAME_CONDITION[condition]
    assert set(names) == set(LAYERS)
    for layer, name in names.items():
        assert name is None or name in LAYERS[layer], (condition, layer, name)


def test_no_name_stands_for_two_conditions_in_one_layer():
    for layer in LAYERS:
        named = [n[layer] for n in SAME_CONDITION.values() if n[layer] is not None]
        assert len(named) == len(set(named)), layer


def test_every_registry_lives_in_errors_and_an_unregistered_code_is_refused():
    registries = [v for k, v in vars(errors).items() if k.isupper() and isinstance(v, dict) and k != "SAME_CONDITION"]
    assert len(registries) >= 7  # error codes, citation, budget, audit, stop reasons, findings, loop stop reasons
    with pytest.raises(KeyError):
        EvidenceError("no_such_code")
