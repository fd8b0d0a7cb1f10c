// A real OpenID provider for kbseek's sign-in tests: the certified `oidc-provider` package, unmodified,
// configured as an identity provider in front of kbseek would be.
//
//   node oidc/provider.js --port PORT [--resource URL ...] [--opaque-resource URL ...]
//                         [--introspector CLIENT_ID]   (its secret in $INTROSPECTOR_SECRET)
//
// - The issuer is http://127.0.0.1:PORT (loopback only), signing with an RSA key made at start.
// - Each --resource is a resource server (RFC 8707 resource indicator) whose access tokens are JWTs
//   (RFC 9068) with `aud` = that URL and the scopes kb:read and kb:write; each --opaque-resource one
//   whose access tokens are opaque, for its server to introspect (RFC 7662) as the --introspector
//   client, the answer naming the resource in `aud`. Any other resource indicator is refused with
//   invalid_target.
// - Dynamic client registration (RFC 7591) is open, as MCP hosts expect.
// - One account, `alice`, with a `groups` claim (in the ID token and userinfo through the `groups`
//   scope, and in every access token issued for her).
// - The package's development interactions: GET /interaction/UID shows a form, and a POST of
//   `prompt=login&login=alice` then `prompt=consent` completes the login and the consent, so a test
//   drives the authorization-code flow over plain HTTP without a browser.
//
// Once listening it prints one line, `issuer http://127.0.0.1:PORT`, to stdout.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

import Provider, { errors } from 'oidc-provider';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    resource: { type: 'string', multiple: true, default: [] },
    'opaque-resource': { type: 'string', multiple: true, default: [] },
    introspector: { type: 'string' },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node provider.js --port PORT [--resource URL ...] [--opaque-resource URL ...] '
    + '[--introspector CLIENT_ID]');
  process.exit(2);
}
const formats = new Map([
  ...values.resource.map((url) => [url, 'jwt']),
  ...values['opaque-resource'].map((url) => [url, 'opaque']),
]);
const clients = [];
if (values.introspector) {
  if (!process.env.INTROSPECTOR_SECRET) {
    console.error('--introspector needs its secret in $INTROSPECTOR_SECRET');
    process.exit(2);
  }
  // A resource server's own client: it introspects tokens and asks for none.
  clients.push({
    client_id: values.introspector,
    client_secret: process.env.INTROSPECTOR_SECRET,
    grant_types: [],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
  });
}
const issuer = `http://127.0.0.1:${port}`;

const ACCOUNTS = {
  alice: { sub: 'alice', name: 'Alice Example', email: 'alice@example.com', groups: ['engineering', 'kb-readers'] },
};

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'signing-1', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  // kbseek's scopes are listed here as well as on its resource server below: a client registering
  // dynamically names the scopes it will ask for (the MCP SDK's client sends those of kbseek's 401
  // challenge), and the provider refuses a registration naming a scope it does not list here
  // (invalid_client_metadata).
  scopes: ['openid', 'offline_access', 'groups', 'kb:read', 'kb:write'],
  claims: {
    openid: ['sub'],
    profile: ['name'],
    email: ['email'],
    groups: ['groups'],
  },
  async findAccount(ctx, id) {
    const account = ACCOUNTS[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return { ...account };
      },
    };
  },
  async extraTokenClaims(ctx, token) {
    const account = token.accountId ? ACCOUNTS[token.accountId] : undefined;
    return account ? { groups: account.groups } : undefined;
  },
  features: {
    devInteractions: { enabled: true },
    introspection: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      async getResourceServerInfo(ctx, resourceIndicator) {
        const format = formats.get(resourceIndicator);
        if (!format) {
          throw new errors.InvalidTarget(`${resourceIndicator} is not a resource server of this provider`);
        }
        return {
          scope: 'kb:read kb:write',
          audience: resourceIndicator,
          accessTokenTTL: 600,
          accessTokenFormat: format,
          ...(format === 'jwt' ? { jwt: { sign: { alg: 'RS256' } } } : {}),
        };
      },
    },
  },
});

provider.on('server_error', (ctx, err) => console.error('server_error', err));

provider.listen(port, '127.0.0.1', () => {
  console.log(`issuer ${issuer}`);
});
