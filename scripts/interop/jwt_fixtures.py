"""Writes crates/barrel-mcp/src/auth/testdata/pyjwt.json: a JWK Set and one token per JWS
algorithm, signed by PyJWT (an implementation independent of barrel-mcp's), for the JOSE tests.

    python3 -m venv /tmp/jwt && /tmp/jwt/bin/pip install pyjwt==2.10.1 cryptography==50.0.2
    /tmp/jwt/bin/python scripts/interop/jwt_fixtures.py

Tests never run this: they read the committed file. Keys are made fresh each time; the tokens
expire in 2100.
"""

import base64
import json
import os
import pathlib

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

OUT = pathlib.Path(__file__).resolve().parents[2] / "crates/barrel-mcp/src/auth/testdata/pyjwt.json"
CLAIMS = {
    "sub": "pyjwt-user",
    "iss": "https://as.example",
    "aud": "https://mcp.example/mcp",
    "exp": 4102444800,
    "iat": 1700000000,
    "scope": "mcp:read mcp:write",
}


def public_jwk(algorithm, key, kid):
    jwk = json.loads(algorithm.to_jwk(key.public_key()))
    jwk["kid"] = kid
    return jwk


def main():
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    p256 = ec.generate_private_key(ec.SECP256R1())
    p384 = ec.generate_private_key(ec.SECP384R1())
    ed = ed25519.Ed25519PrivateKey.generate()
    secret = os.urandom(64)
    keys = [
        public_jwk(RSAAlgorithm, rsa_key, "rsa-1"),
        public_jwk(ECAlgorithm, p256, "ec-256"),
        public_jwk(ECAlgorithm, p384, "ec-384"),
        public_jwk(OKPAlgorithm, ed, "ed-1"),
    ]
    signers = {
        "HS256": (secret, None), "HS384": (secret, None), "HS512": (secret, None),
        "RS256": (rsa_key, "rsa-1"), "RS384": (rsa_key, "rsa-1"), "RS512": (rsa_key, "rsa-1"),
        "PS256": (rsa_key, "rsa-1"), "PS384": (rsa_key, "rsa-1"), "PS512": (rsa_key, "rsa-1"),
        "ES256": (p256, "ec-256"), "ES384": (p384, "ec-384"), "EdDSA": (ed, "ed-1"),
    }
    tokens = {}
    for alg, (key, kid) in signers.items():
        headers = {"kid": kid} if kid else None
        tokens[alg] = jwt.encode(CLAIMS, key, algorithm=alg, headers=headers)
    document = {
        "generator": f"PyJWT {jwt.__version__}",
        "jwks": {"keys": keys},
        "hmac_secret": base64.urlsafe_b64encode(secret).rstrip(b"=").decode(),
        "claims": CLAIMS,
        "tokens": tokens,
    }
    OUT.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {OUT}")


main()
