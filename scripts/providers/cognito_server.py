#!/usr/bin/env python3
"""moto's Cognito server with what moto 5.2 lacks and Latchkey's tests need (run by
scripts/providers/cognito; arguments as moto_server's: -H HOST -p PORT).

Refresh token rotation (AWS's RefreshTokenRotationType, on an app client created or updated with
RefreshTokenRotation={"Feature": "ENABLED", "RetryGracePeriodSeconds": N}):

  * X-Amz-Target AWSCognitoIdentityProviderService.GetTokensFromRefreshToken
      {"ClientId", "RefreshToken", "ClientSecret"?, "ClientMetadata"?, "DeviceKey"?}
      -> {"AuthenticationResult": {"AccessToken", "IdToken", "ExpiresIn", "TokenType",
          "RefreshToken" (a new one, only when the client rotates)}}
    With rotation, the submitted refresh token stays valid for RetryGracePeriodSeconds (0-60)
    and is then refused with RefreshTokenReuseException, as AWS documents for a token rotation
    invalidated. Without rotation it answers as REFRESH_TOKEN_AUTH does.
  * InitiateAuth with REFRESH_TOKEN_AUTH on a rotating client is refused: AWS documents that
    it cannot be used there; the error type and message below are this harness's choice
    (InvalidParameterException naming rotation), not observed from AWS.

A new refresh token is moto's own (pool.refresh_tokens), so GlobalSignOut and
AdminUserGlobalSignOut end it as they end the first.
"""
import json
import sys
import time

from moto.cognitoidp import models
from moto.cognitoidp.exceptions import InvalidParameterException, NotAuthorizedError, ResourceNotFoundError
from moto.cognitoidp.responses import CognitoIdpResponse
from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult
from moto.server import main as moto_main

# Refresh tokens rotated out: token -> the time after which it is refused.
ROTATED_OUT = {}


class RefreshTokenReuseError(JsonRESTError):
    def __init__(self):
        super().__init__("RefreshTokenReuseException", "The refresh token was rotated out and can no longer be used.")


def rotation(client):
    """The client's RefreshTokenRotation, when its Feature is ENABLED."""
    config = client.extended_config.get("RefreshTokenRotation") or {}
    return config if config.get("Feature") == "ENABLED" else None


def find(client_id):
    for account in list(models.cognitoidp_backends.values()):
        for region, backend in list(account.items()):
            if region == "global":
                continue
            for pool in list(backend.user_pools.values()):
                if client_id in pool.clients:
                    return pool, pool.clients[client_id]
    raise ResourceNotFoundError(client_id)


def get_tokens_from_refresh_token(self):
    body = json.loads(self.body or "{}")
    client_id, token = body.get("ClientId"), body.get("RefreshToken")
    if not client_id or not token:
        raise InvalidParameterException("ClientId and RefreshToken are required.")
    pool, client = find(client_id)
    if client.generate_secret and body.get("ClientSecret") != client.secret:
        raise NotAuthorizedError("Client secret is wrong.")
    if token in ROTATED_OUT and time.time() > ROTATED_OUT[token]:
        raise RefreshTokenReuseError()
    entry = pool.refresh_tokens.get(token)
    if entry is None:
        raise NotAuthorizedError("Invalid Refresh Token")
    owner, username, _ = entry
    if owner != client_id:
        raise NotAuthorizedError("Invalid Refresh Token")
    access_token, id_token, expires_in = pool.create_tokens_from_refresh_token(token)
    result = {"AccessToken": access_token, "IdToken": id_token, "ExpiresIn": expires_in, "TokenType": "Bearer"}
    config = rotation(client)
    if config is not None:
        grace = max(0, min(60, int(config.get("RetryGracePeriodSeconds", 0))))
        if token not in ROTATED_OUT:
            ROTATED_OUT[token] = time.time() + grace
            if grace == 0:
                pool.refresh_tokens[token] = None
        new_token, origin = pool.create_refresh_token(client_id, username)
        # The new tokens belong to the new refresh token, as a fresh sign-in's do.
        result["AccessToken"], result["ExpiresIn"] = pool.create_access_token(client_id, username, origin)
        result["IdToken"], _ = pool.create_id_token(client_id, username, origin)
        result["RefreshToken"] = new_token
    return ActionResult({"AuthenticationResult": result})


moto_initiate_auth = CognitoIdpResponse.initiate_auth


def initiate_auth(self):
    if self._get_param("AuthFlow") in ("REFRESH_TOKEN_AUTH", "REFRESH_TOKEN"):
        _, client = find(self._get_param("ClientId"))
        if rotation(client) is not None:
            raise InvalidParameterException(
                "Refresh token rotation is enabled for this app client: refresh with GetTokensFromRefreshToken.")
    return moto_initiate_auth(self)


CognitoIdpResponse.get_tokens_from_refresh_token = get_tokens_from_refresh_token
CognitoIdpResponse.initiate_auth = initiate_auth

if __name__ == "__main__":
    moto_main(sys.argv[1:])
