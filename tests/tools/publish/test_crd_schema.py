"""``generate crd`` writes a kind's schema from its role's argument specs: types, defaults,
enums, descriptions, required fields, nested dicts and lists of dicts; it keeps what the
specs cannot say, and leaves hand-written CRDs alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.tools.publish import crd
from runner.tools.publish.errors import PublishError
from tests.tools.publish.support import PROJECT, crd_file, load, make_project, spec_schema


def generate(root: Path) -> list[crd.Outcome]:
    return crd.generate(root, watches_file=root / "watches.yaml", out=lambda _: None)


@pytest.fixture
def generated(tmp_path: Path) -> Any:
    root = make_project(tmp_path)
    outcomes = generate(root)
    assert [o.action for o in outcomes] == ["wrote"], f"expected one CRD written, saw {outcomes}"
    return load(crd_file(root))


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        pytest.param(
            "size",
            {"description": "How many items.", "type": "integer", "default": 3},
            id="int-with-default",
        ),
        pytest.param(
            "colour",
            {"description": "The rack's colour.", "type": "string", "enum": ["red", "green"]},
            id="choices-are-an-enum",
        ),
        pytest.param("maxWeightKg", {"type": "number"}, id="float-camel-cased"),
        pytest.param("enabled", {"type": "boolean", "default": True}, id="bool"),
        pytest.param(
            "labels",
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            id="dict-without-options-stays-open",
        ),
        pytest.param(
            "anything", {"x-kubernetes-preserve-unknown-fields": True}, id="raw-is-anything"
        ),
        pytest.param("tags", {"type": "array", "items": {"type": "string"}}, id="list-of-str"),
        pytest.param(
            "placement",
            {
                "type": "object",
                "properties": {"zoneName": {"type": "string"}, "spread": {"type": "boolean"}},
                "required": ["zoneName"],
            },
            id="nested-dict",
        ),
        pytest.param(
            "items",
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "itemName": {"type": "string"},
                        "count": {"type": "integer", "default": 1},
                    },
                    "required": ["itemName"],
                },
            },
            id="list-of-dicts",
        ),
        pytest.param("httpURL", {"type": "string"}, id="alias-keeps-the-acronym"),
    ],
)
def test_option_becomes_field(generated: Any, field: str, expected: dict[str, Any]) -> None:
    seen = spec_schema(generated)["properties"].get(field)
    assert seen == expected, f"expected spec.{field} as {expected}, saw {seen}"


def test_spec_is_closed_and_status_has_our_conditions(generated: Any) -> None:
    version = generated["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    assert "x-kubernetes-preserve-unknown-fields" not in spec, "spec keeps unknown fields"
    assert spec["description"] == "What the rack holds."
    assert schema["description"] == "A rack of items."
    conditions = schema["properties"]["status"]["properties"]["conditions"]
    assert conditions["items"]["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert "ansibleResult" in conditions["items"]["properties"]
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"] == [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
    ]
    assert generated["spec"]["names"]["plural"] == "racks"


def test_new_crd_is_listed_in_the_kustomization(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    generate(root)
    text = (root / "config/crd/kustomization.yaml").read_text()
    assert "  - bases/shop.example.com_racks.yaml\n" in text, text


def test_regeneration_keeps_constraints_the_specs_cannot_say(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    generate(root)
    path = crd_file(root)
    edited = load(path)
    spec = spec_schema(edited)
    spec["properties"]["size"].update(minimum=0, maximum=10, default=99)
    spec["properties"]["labels"]["additionalProperties"] = {"type": "string"}
    spec["properties"]["anything"].update({"x-kubernetes-int-or-string": True})
    spec["x-kubernetes-validations"] = [{"rule": "self.size < 5", "message": "small"}]
    spec["properties"]["gone"] = {"type": "string"}
    status = edited["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    status["properties"]["ready"] = {"type": "integer"}
    path.write_text(yaml.safe_dump(edited))
    generate(root)
    again = spec_schema(load(path))
    size = again["properties"]["size"]
    assert (size["minimum"], size["maximum"], size["default"]) == (0, 10, 3), (
        f"expected the bounds kept and the specs' default back, saw {size}"
    )
    assert again["properties"]["labels"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }, "additionalProperties narrows the open dict, which then drops preserve-unknown-fields"
    assert again["properties"]["anything"] == {"x-kubernetes-int-or-string": True}
    assert again["x-kubernetes-validations"] == [{"rule": "self.size < 5", "message": "small"}]
    assert "gone" not in again["properties"], "a field the specs dropped stays in the CRD"
    status = load(path)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert status["properties"]["ready"] == {"type": "integer"}, "author's status field lost"


def test_generation_is_stable(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    generate(root)
    first = crd_file(root).read_text()
    generate(root)
    assert crd_file(root).read_text() == first, "a second run changed the CRD"


def test_hand_written_crd_is_left_alone(tmp_path: Path) -> None:
    root = make_project(
        tmp_path, project=PROJECT.split("  crds.playbook-operator.io")[0] + "projectName: x\n"
    )
    hand = "# mine\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    hand += "spec:\n  group: shop.example.com\n  names:\n    kind: Rack\n"
    crd_file(root).write_text(hand)
    outcomes = generate(root)
    assert [o.action for o in outcomes] == ["kept"], outcomes
    assert crd_file(root).read_text() == hand, "a hand-written CRD was rewritten"


@pytest.mark.parametrize(
    ("specs", "complaint"),
    [
        pytest.param(
            "argument_specs:\n  main:\n    options:\n      a:\n        type: tuple\n",
            "unknown type",
            id="unknown-type",
        ),
        pytest.param(
            "argument_specs:\n  main:\n    options:\n      a:\n        type: str\n"
            "        options: {b: {type: str}}\n",
            "options are for type dict",
            id="options-on-a-string",
        ),
        pytest.param(
            "argument_specs:\n  main:\n    options:\n      bigData:\n        type: str\n",
            "reaches the role as 'big_data'",
            id="option-no-cr-field-reaches",
        ),
        pytest.param("argument_specs: {}\n", "no argument_specs.main", id="no-main"),
    ],
)
def test_specs_a_schema_cannot_follow_are_refused(
    tmp_path: Path, specs: str, complaint: str
) -> None:
    root = make_project(tmp_path, specs=specs)
    kustomization = (root / "config/crd/kustomization.yaml").read_text()
    with pytest.raises(PublishError, match=complaint):
        generate(root)
    assert not crd_file(root).exists(), "a refused generation wrote a file"
    assert (root / "config/crd/kustomization.yaml").read_text() == kustomization, (
        "a refused generation listed the CRD in the kustomization"
    )
