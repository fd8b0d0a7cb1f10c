"""kbseek over HTTP as an OAuth 2.1 resource server: which bearer tokens it takes, and who sent them.

The MCP specification's "Authorization" makes an HTTP MCP server a resource server: it publishes
where its tokens come from (RFC 9728 metadata), refuses a call without a token (``401``) or without
the scope it needs (``403``), and takes only tokens issued for itself. The SDK gives the pieces
(``TokenVerifier``, ``AccessToken``, ``get_access_token``) and no verifier; these modules are ours
(docs/decisions/0054):

- ``settings``: ``[auth]`` and the ``serve`` flags resolved, secrets read from the environment;
- ``jwt_verifier`` (with ``discovery`` and ``jwks``): JWTs checked against the issuer's keys;
- ``introspection``: opaque tokens asked of the issuer (RFC 7662);
- ``static``: named static tokens, beside OAuth or alone (``--token-env``);
- ``audience``: the one comparison of a token's audience with the resource URL;
- ``metadata``: the RFC 9728 document and the ``WWW-Authenticate`` challenges;
- ``identity``: the caller, as every later piece reads it;
- ``gate``: the ASGI step that puts them together in front of ``/mcp`` and ``/api``;
- ``browser`` (with ``flow`` and ``sessions``): the web page's own sign-in, the authorization-code
  flow with PKCE run by the server, and the HttpOnly session cookie ``/api`` also takes
  (docs/decisions/0056).
"""
