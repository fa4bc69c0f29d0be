"""TLS for the ``tls-port`` listener: an ``ssl.SSLContext`` built from the ``tls-*`` settings.

Mirrors Redis's ``tls.c`` (``tlsConfigure``, ``createSSLContext``, ``parseProtocolsConfig``):

* ``tls-cert-file`` / ``tls-key-file`` (``tls-key-file-pass``) are required;
* ``tls-auth-clients yes`` (the default) requires a client certificate signed by
  ``tls-ca-cert-file`` / ``tls-ca-cert-dir``; ``optional`` verifies one if sent; ``no`` asks
  for none. A CA is required unless ``tls-auth-clients no``;
* ``tls-protocols`` is a space-separated set of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3 (default
  TLSv1.2 and TLSv1.3); ``tls-ciphers``, ``tls-prefer-server-ciphers``, ``tls-session-caching``,
  ``tls-dh-params-file`` map to the matching OpenSSL settings;
* changing the certificate files with CONFIG SET reloads them into the same context, so new
  connections use the new certificate (Redis rebuilds its context the same way).

Deviation: ``tls-ciphersuites`` (TLSv1.3 suites) has no Python ``ssl`` API; it is accepted and
ignored with a warning. Handshakes happen in asyncio's SSL protocol before the connection
reaches ``ClientProtocol``; a failed handshake closes the socket without a client ever existing.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from sluice.commands.errors import ConfigError

from .config import Config

log = logging.getLogger("sluice")

_VERSIONS = {
    "tlsv1": ssl.TLSVersion.TLSv1,
    "tlsv1.1": ssl.TLSVersion.TLSv1_1,
    "tlsv1.2": ssl.TLSVersion.TLSv1_2,
    "tlsv1.3": ssl.TLSVersion.TLSv1_3,
}
_ORDER = list(_VERSIONS)
_NO_FLAGS = {
    "tlsv1": ssl.OP_NO_TLSv1,
    "tlsv1.1": ssl.OP_NO_TLSv1_1,
    "tlsv1.2": ssl.OP_NO_TLSv1_2,
    "tlsv1.3": ssl.OP_NO_TLSv1_3,
}


def parse_protocols(text: str) -> set[str]:
    """``parseProtocolsConfig``: the enabled protocol names (lower case)."""
    if not text.strip():
        return {"tlsv1.2", "tlsv1.3"}
    out = set()
    for word in text.split():
        w = word.lower()
        if w not in _VERSIONS:
            raise ConfigError("Invalid tls-protocols specified. Use a combination of 'TLSv1', "
                              "'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
        out.add(w)
    return out


def build_context(cfg: Config) -> ssl.SSLContext:
    """A server-side context; raises ``ConfigError`` with Redis's reason when misconfigured."""
    if not cfg.tls_cert_file:
        raise ConfigError("No tls-cert-file configured!")
    if not cfg.tls_key_file:
        raise ConfigError("No tls-key-file configured!")
    if cfg.tls_auth_clients != "no" and not (cfg.tls_ca_cert_file or cfg.tls_ca_cert_dir):
        raise ConfigError("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when "
                          "tls-cluster, tls-replication or tls-auth-clients are enabled!")
    protocols = parse_protocols(cfg.tls_protocols)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    enabled = [p for p in _ORDER if p in protocols]
    try:
        ctx.minimum_version = _VERSIONS[enabled[0]]
        ctx.maximum_version = _VERSIONS[enabled[-1]]
    except ValueError as e:  # a version this OpenSSL refuses
        raise ConfigError(f"Failed to configure TLS protocols: {e}") from None
    for p in _ORDER[_ORDER.index(enabled[0]):_ORDER.index(enabled[-1]) + 1]:
        if p not in protocols:
            ctx.options |= _NO_FLAGS[p]  # a gap in the set ("TLSv1 TLSv1.2")
    if hasattr(ssl, "OP_NO_RENEGOTIATION"):
        ctx.options |= ssl.OP_NO_RENEGOTIATION
    if cfg.tls_prefer_server_ciphers:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    if not cfg.tls_session_caching:
        ctx.options |= ssl.OP_NO_TICKET
    _load_cert(ctx, cfg)
    if cfg.tls_ca_cert_file or cfg.tls_ca_cert_dir:
        try:
            ctx.load_verify_locations(cafile=cfg.tls_ca_cert_file or None,
                                      capath=cfg.tls_ca_cert_dir or None)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"Failed to configure CA certificate(s) file/directory: {e}") from None
    ctx.verify_mode = {"yes": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL,
                       "no": ssl.CERT_NONE}[cfg.tls_auth_clients]
    if cfg.tls_ciphers:
        try:
            ctx.set_ciphers(cfg.tls_ciphers)
        except ssl.SSLError as e:
            raise ConfigError(f"Failed to configure ciphers: {e}") from None
    if cfg.tls_ciphersuites:
        log.warning("tls-ciphersuites is not supported by Python's ssl module; ignored")
    if cfg.tls_dh_params_file:
        try:
            ctx.load_dh_params(cfg.tls_dh_params_file)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"Failed to load DH params file: {cfg.tls_dh_params_file}: {e}") from None
    return ctx


def _load_cert(ctx: ssl.SSLContext, cfg: Config) -> None:
    try:
        ctx.load_cert_chain(cfg.tls_cert_file, cfg.tls_key_file,
                            password=cfg.tls_key_file_pass or None)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"Failed to load certificate: {cfg.tls_cert_file}: {e}") from None


def watch_settings(cfg: Config, ctx: ssl.SSLContext) -> None:
    """CONFIG SET of the certificate or CA files reloads them into the live context."""

    def reload_cert(_value: Any) -> None:
        _load_cert(ctx, cfg)

    def reload_ca(_value: Any) -> None:
        if cfg.tls_ca_cert_file or cfg.tls_ca_cert_dir:
            ctx.load_verify_locations(cafile=cfg.tls_ca_cert_file or None,
                                      capath=cfg.tls_ca_cert_dir or None)

    def auth_clients(value: Any) -> None:
        ctx.verify_mode = {"yes": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL,
                           "no": ssl.CERT_NONE}[value]

    for name in ("tls-cert-file", "tls-key-file", "tls-key-file-pass"):
        cfg.on_change(name, reload_cert)
    for name in ("tls-ca-cert-file", "tls-ca-cert-dir"):
        cfg.on_change(name, reload_ca)
    cfg.on_change("tls-auth-clients", auth_clients)
