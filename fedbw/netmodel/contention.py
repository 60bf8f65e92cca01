"""CPU that two parts of a deployment share: the SuperLink's, by the clients it serves at once, and a
device's one core, by its SuperNode and the ClientApp launched beside a download.

``fedbw calibrate`` measures a hop's object work (``hop_object_s``, ``hop_s_per_mib``) one client at a
time, so it holds both ends' CPU of one transfer. A SuperLink is one process serving every SuperNode:
its part of that work (``server_share``) is one queue for all the transfers in service at once, while
each device's part runs on the device. With n transfers at the SuperLink together each request's server
work is stretched n-fold (processor sharing), which is how eight ResNet-18 downloads through one
SuperLink each take longer than one alone; n counts the transfers by how much they overlap
(:func:`stage_concurrency`). Pure: no Flower, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence


def expected_overlap(duration_s: float, spread_s: float) -> float:
    """The expected share of one transfer that another one like it overlaps, their starts independent and
    uniform over ``spread_s`` (clients alike whose SuperNodes poll at unknown phases of their grid).

    With d = |Δ start| (density 2(P − d)/P² on [0, P]) the overlap is max(0, T − d)/T; its mean is
    T/P − T²/(3P²) for T ≤ P and 1 − P/(3T) beyond.
    """
    t, p = max(0.0, duration_s), max(0.0, spread_s)
    if t <= 0:
        return 0.0
    if p <= 0:
        return 1.0
    return t / p - t * t / (3 * p * p) if t <= p else 1 - p / (3 * t)


def hop_cpu_factor(server_share: float, concurrency: float, client_speed: float = 1.0,
                   server_speed: float = 1.0) -> float:
    """What one second of a hop's calibrated object CPU costs with ``concurrency`` transfers at the SuperLink
    at once: the client's part at its own speed, the SuperLink's part shared by every transfer it serves.
    At one transfer and both speeds 1 it is 1: the calibration's meaning is unchanged for one client."""
    return (1.0 - server_share) / client_speed + server_share * max(1.0, concurrency) / server_speed


def stage_concurrency(i: int, windows: Sequence[tuple[float, float]], counts: Sequence[int], anchored: bool,
                      spread_s: float) -> float:
    """How many other transfers class ``i``'s transfer meets at the SuperLink, each by the share of it
    they overlap: the other classes' windows as laid out, and the class's own other members — whole
    when the class's SuperNodes poll on one grid (``anchored``: anchored at their last replies, which
    clients alike send together), else at the expected overlap of independent phases over ``spread_s``
    (idle SuperNodes, started at unknown times)."""
    a, b = windows[i]
    length = b - a
    if length <= 0:
        return 0.0
    own = 1.0 if anchored else expected_overlap(length, spread_s)
    n = (counts[i] - 1) * own
    for j, (c, d) in enumerate(windows):
        if j != i:
            n += counts[j] * max(0.0, min(b, d) - max(a, c)) / length
    return n


def node_cpu_during_download_s(share: float, hop_cpu_s: float, t_pull_s: float, t_received_s: float,
                               t_launch_s: float) -> float:
    """The SuperNode's CPU for a download that is still arriving once the ClientApp is launched.

    The SuperExec launches the ClientApp as soon as the message is pulled, so for a large message the
    process starts, and pulls the objects already stored, while the SuperNode still receives the rest,
    on the same device. The SuperNode's ``share`` of the download's hop CPU (``hop_cpu_s``;
    ``node_download_share``, fitted by ``fedbw calibrate`` from a shaped run), spread evenly over the
    download, delays the ClientApp by the part that falls after the launch. Nothing when the download was
    over before the launch (the unshaped calibration runs, small messages).
    """
    if t_received_s <= t_launch_s or t_received_s <= t_pull_s or share <= 0:
        return 0.0
    after = (t_received_s - max(t_launch_s, t_pull_s)) / (t_received_s - t_pull_s)
    return share * hop_cpu_s * after
