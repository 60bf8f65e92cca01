import pytest

from fedbw.errors import ConfigError
from fedbw.results.sweep_index import point_label, short_key
from fedbw.sweeps.grid import grid_points, parse_grid, point_sets, split_values


def test_values_split_at_top_level_commas_only():
    assert split_values('home-30, home-50') == ["home-30", "home-50"]
    assert split_values('[1, 2],[3]') == ["[1, 2]", "[3]"]
    assert split_values('"a,b",c') == ['"a,b"', "c"]
    assert split_values('{ a = 1, b = 2 },x') == ["{ a = 1, b = 2 }", "x"]


def test_grid_values_are_toml_values_and_points_are_the_product_in_order():
    axes = parse_grid(["network.profile=home-30,home-80", "training.rounds=2,4,8", "clients.sampling=[1, 2],3.5"])
    assert axes[0].values == ("home-30", "home-80")
    assert axes[1].values == (2, 4, 8)
    assert axes[2].values == ([1, 2], 3.5)
    points = grid_points(axes)
    assert len(points) == 2 * 3 * 2
    assert points[0] == {"network.profile": "home-30", "training.rounds": 2, "clients.sampling": [1, 2]}
    assert points[-1] == {"network.profile": "home-80", "training.rounds": 8, "clients.sampling": 3.5}
    assert point_sets(points[0]) == ['network.profile="home-30"', "training.rounds=2", "clients.sampling=[1, 2]"]


@pytest.mark.parametrize("item, words", [
    ("network.profile", "key=value"),
    ("network.profile=home-30,,home-50", "empty value"),
    ("training.rounds=2,2", "repeated"),
    ("output_dir=a,b", "set by the sweep"),
    ("name=a,b", "set by the sweep"),
])
def test_bad_grid_items_are_config_errors(item, words):
    with pytest.raises(ConfigError, match=words):
        parse_grid([item])


def test_a_key_twice_and_a_huge_grid_are_refused():
    with pytest.raises(ConfigError, match="twice"):
        parse_grid(["training.rounds=1,2", "training.rounds=3"])
    values = ",".join(str(i) for i in range(101))
    with pytest.raises(ConfigError, match="points"):
        parse_grid([f"a.x={values}", f"b.y={values}"])


def test_labels_name_values_and_disambiguate_vague_keys():
    assert point_label({"network.profile": "home-30"}) == "home-30"
    assert point_label({"network.profile": "home-30", "privacy.secagg.enabled": True}) == \
        "profile=home-30 · secagg.enabled=true"
    assert short_key("training.rounds", ["training.rounds"]) == "rounds"
    assert short_key("a.x.rate", ["a.x.rate", "b.y.rate"]) == "x.rate"
