"""The federation's credentials: a throw-away CA and server certificate (TLS) and one key pair per
SuperNode (SuperNode authentication), all made for one run inside its temporary work directory.

Why here and not in :mod:`.flower` or :mod:`.hosts`: the loopback federation and the one across
network hosts both serve TLS and both authenticate SuperNodes, the same way a person does it for a
real deployment with openssl and ``ssh-keygen -t ecdsa -b 384`` (docs/emulate.md, docs/multi-host.md).
Nothing written here is ever copied into a run directory: the work directory is removed when the run
ends, and only its ``logs/`` are copied out.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Where a run's SuperNode key pairs live, inside its work directory.
KEYS_DIR = "supernode-keys"


@dataclass(frozen=True)
class TlsFiles:
    """A CA certificate and the server's certificate and key it signed (PEM files)."""

    ca: Path
    cert: Path
    key: Path


def make_tls(directory: Path, addresses: Sequence[str]) -> TlsFiles:
    """A throw-away CA and a server certificate for ``addresses`` (IP subject-alternative names) in
    ``directory``; what a person does with openssl for a real deployment (docs/multi-host.md)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fedbw emulate CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    names = [x509.DNSName("localhost"), *(x509.IPAddress(ipaddress.ip_address(a)) for a in addresses)]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fedbw superlink")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .sign(ca_key, hashes.SHA256()))
    files = TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    files.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(files.key, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()))
    return files


@dataclass(frozen=True)
class SuperNodeKey:
    """One SuperNode's key pair: ``private`` for ``flower-supernode --auth-supernode-private-key``,
    ``public`` for ``flwr supernode register`` (both OpenSSH format, as Flower 1.42 reads them)."""

    name: str
    private: Path
    public: Path


def make_supernode_key(directory: Path, name: str) -> SuperNodeKey:
    """A fresh ECDSA P-384 key pair for SuperNode ``name`` in ``directory`` (the private key readable
    by its owner only): the curve Flower's docs generate with ``ssh-keygen -t ecdsa -b 384``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = ec.generate_private_key(ec.SECP384R1())
    out = SuperNodeKey(name, directory / f"{name}.key", directory / f"{name}.pub")
    _write_private(out.private, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                                  serialization.NoEncryption()))
    out.public.write_bytes(key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                         serialization.PublicFormat.OpenSSH) + b"\n")
    return out


def _write_private(path: Path, data: bytes) -> None:
    """A private key file that only its owner can read, from the moment it exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def supernode_auth_error(tls: bool) -> str | None:
    """Why SuperNode authentication cannot run (Flower 1.42 refuses it without TLS), or None."""
    if tls:
        return None
    return ('emulate.supernode_auth needs TLS (Flower refuses SuperNode authentication on an insecure '
            'SuperLink): set emulate.tls = true (fedbw emulate: --tls), or hosts = "netns", which always runs TLS')
