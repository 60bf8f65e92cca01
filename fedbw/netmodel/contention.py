"""CPU that two parts of a deployment share: a device's one core, by its SuperNode and the ClientApp
launched beside a download. Pure: no Flower, no torch.

(The SuperLink's CPU shared by the clients it serves at once was modelled here too, as a share of the
hop's object work; fitted from four clients whose transfers overlapped, the share was 0 in every
calibration, and it was removed with its fit and its calibration run.)
"""

from __future__ import annotations


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
