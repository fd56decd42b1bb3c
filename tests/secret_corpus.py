"""The secret corpus: one synthetic value per real format, built from recipes written
from the vendors' documentation and the public rule lists (gitleaks, detect-secrets),
with valid check digits where the format has one (GitHub and npm CRC32, age bech32,
JWT headers, Basic credentials). Deterministic: the same seed gives the same corpus.

    python3 tests/secret_corpus.py     # rewrite tests/data/secrets/corpus.json

Each entry: id, name, family, value (the secret itself), text (the secret as a person
pastes it: the value inside its usual context), needle (a part of the value that must
never reach the estate). The recipes do not read notrest's rule table.
"""
import base64
import binascii
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS_PATH = os.path.join(HERE, "data", "secrets", "corpus.json")
SEED = 1207

LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()
DIGITS = "0123456789"
CHARSETS = {
    "an": UPPER + LOWER + DIGITS, "AN": UPPER + DIGITS, "al": LOWER + DIGITS,
    "a": LOWER, "A": UPPER, "aA": UPPER + LOWER, "d": DIGITS, "hex": DIGITS + "abcdef",
    "HEX": DIGITS + "ABCDEF", "b64": UPPER + LOWER + DIGITS + "+/",
    "b64u": UPPER + LOWER + DIGITS + "_-", "b32": UPPER + "234567",
    "b32l": LOWER + "234567",
}
BASE62 = DIGITS + UPPER + LOWER
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


class Maker:
    """Random pieces of values, from one seeded generator."""

    def __init__(self, seed=SEED):
        self.rng = random.Random(seed)

    def chars(self, kind, size):
        alphabet = CHARSETS[kind]
        while True:
            out = "".join(self.rng.choice(alphabet) for _ in range(size))
            # a real generator mixes its alphabet: redraw the rare flat draws
            if size < 8 or len(set(out)) >= min(len(alphabet), size) * 0.5:
                return out

    def uuid(self, upper=False):
        h = self.chars("hex", 32)
        value = "%s-%s-4%s-a%s-%s" % (h[:8], h[8:12], h[13:16], h[17:20], h[20:])
        return value.upper() if upper else value

    def crc_token(self, prefix, size=30):
        """GitHub and npm tokens: 30 base62 characters, then the CRC32 of those in
        base62, 6 characters."""
        body = self.chars("an", size)
        return prefix + body + base62(binascii.crc32(body.encode()), 6)

    def b64_of(self, size):
        return base64.b64encode(self.rng.randbytes(size)).decode()

    def b64u_of(self, size):
        return base64.urlsafe_b64encode(self.rng.randbytes(size)).decode().rstrip("=")

    def jwt(self):
        header = b64u(b'{"alg":"HS256","typ":"JWT"}')
        payload = b64u(json.dumps({"sub": self.chars("d", 10), "iat": 1700000000,
                                   "name": "t"}).encode())
        return "%s.%s.%s" % (header, payload, self.b64u_of(32))

    def pem(self, label, lines=12):
        body = "\n".join(self.b64_of(48) for _ in range(lines))
        return "-----BEGIN %s-----\n%s\n-----END %s-----" % (label, body, label)

    def age(self):
        data = [self.rng.randrange(32) for _ in range(52)]
        return bech32_encode("age-secret-key-", data).upper()


def base62(number, width):
    out = ""
    while number:
        number, rest = divmod(number, 62)
        out = BASE62[rest] + out
    return out.rjust(width, "0")


def b64u(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def bech32_encode(hrp, data):
    def polymod(values):
        check = 1
        for value in values:
            top = check >> 25
            check = (check & 0x1ffffff) << 5 ^ value
            for i, gen in enumerate((0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd,
                                     0x2a1462b3)):
                if (top >> i) & 1:
                    check ^= gen
        return check
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    mod = polymod(expanded + data + [0] * 6) ^ 1
    checksum = [(mod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(BECH32[d] for d in data + checksum)


# ---- the recipes -----------------------------------------------------------------
# (id, name, family, how the value is made, how a person pastes it). In the context,
# {v} is the value. Contexts name the variable or header the format lives in.

def recipes(m):
    c = m.chars
    bare = "here is what I have: {v} - why does the request fail?"
    out = []

    def add(rid, name, family, value, context=bare, needle=None, secret=None):
        out.append({"id": rid, "name": name, "family": family, "value": value,
                    "text": context.replace("{v}", value),
                    "secret": secret or _secret_part(value),
                    "needle": needle or _needle(secret or value)})

    # version control, CI, registries
    add("github-pat", "GitHub personal access token", "vcs", m.crc_token("ghp_"))
    add("github-oauth", "GitHub OAuth access token", "vcs", m.crc_token("gho_"))
    add("github-user-to-server", "GitHub App user-to-server token", "vcs",
        m.crc_token("ghu_"))
    add("github-installation", "GitHub App installation token", "vcs",
        m.crc_token("ghs_"), "GH_TOKEN={v} gh api /repos")
    add("github-refresh", "GitHub refresh token", "vcs", m.crc_token("ghr_"))
    add("github-fine-grained-pat", "GitHub fine-grained PAT", "vcs",
        "github_pat_11" + c("AN", 20) + "_" + c("an", 59))
    add("gitlab-pat", "GitLab personal access token", "vcs", "glpat-" + c("b64u", 20),
        "curl --header 'PRIVATE-TOKEN: {v}' https://gitlab.example.com/api/v4/user")
    add("gitlab-pat-routable", "GitLab routable personal access token", "vcs",
        "glpat-" + m.b64u_of(30) + ".01" + c("al", 7))
    add("gitlab-deploy-token", "GitLab deploy token", "vcs", "gldt-" + c("b64u", 20))
    add("gitlab-feed-token", "GitLab feed token", "vcs", "glft-" + c("b64u", 20))
    add("gitlab-incoming-mail-token", "GitLab incoming mail token", "vcs",
        "glimt-" + c("b64u", 25))
    add("gitlab-agent-token", "GitLab Kubernetes agent token", "vcs",
        "glagent-" + c("b64u", 50))
    add("gitlab-oauth-secret", "GitLab OAuth application secret", "vcs",
        "gloas-" + c("b64u", 64))
    add("gitlab-trigger-token", "GitLab pipeline trigger token", "vcs",
        "glptt-" + c("hex", 40))
    add("gitlab-runner-token", "GitLab runner authentication token", "vcs",
        "glrt-" + c("b64u", 20))
    add("gitlab-runner-registration", "GitLab runner registration token", "vcs",
        "GR1348941" + c("b64u", 20))
    add("gitlab-job-token", "GitLab CI/CD job token", "vcs",
        "glcbt-" + c("hex", 2) + "_" + c("b64u", 20))
    add("gitlab-scim-token", "GitLab SCIM token", "vcs", "glsoat-" + c("b64u", 20))
    add("gitlab-feature-flag-token", "GitLab feature flag client token", "vcs",
        "glffct-" + c("b64u", 20))
    add("gitlab-session-cookie", "GitLab session cookie", "vcs",
        "_gitlab_session=" + c("al", 32), "Cookie: {v}")
    add("bitbucket-app-password", "Bitbucket app password", "vcs", "ATBB" + c("an", 32))
    add("atlassian-api-token", "Atlassian API token", "vcs", "ATATT3" + c("b64u", 186))
    add("circleci-personal-token", "CircleCI personal API token", "ci",
        "CCIPAT_" + c("an", 22) + "_" + c("hex", 40))
    add("buildkite-token", "Buildkite API access token", "ci", "bkua_" + c("hex", 40))
    add("npm-token", "npm access token", "registry", m.crc_token("npm_"),
        "//registry.npmjs.org/:_authToken={v}")
    add("pypi-token", "PyPI upload token", "registry",
        "pypi-AgEIcHlwaS5vcmc" + m.b64u_of(90), "password = {v}")
    add("testpypi-token", "TestPyPI upload token", "registry",
        "pypi-AgENdGVzdC5weXBpLm9yZw" + m.b64u_of(90))
    add("rubygems-key", "RubyGems API key", "registry", "rubygems_" + c("hex", 48))
    add("nuget-api-key", "NuGet API key", "registry", "oy2" + c("al", 43))
    add("clojars-token", "Clojars deploy token", "registry", "CLOJARS_" + c("al", 60))
    add("jfrog-api-key", "JFrog Artifactory API key", "registry", "AKCp" + c("an", 69))
    add("jfrog-reference-token", "JFrog reference token", "registry",
        "cmVmd" + c("an", 59))
    add("octopus-api-key", "Octopus Deploy API key", "ci", "API-" + c("AN", 26))
    add("sonarqube-user-token", "SonarQube user token", "ci", "squ_" + c("hex", 40))
    add("sonarqube-project-token", "SonarQube project token", "ci", "sqp_" + c("hex", 40))
    add("sonarqube-analysis-token", "SonarQube analysis token", "ci", "sqa_" + c("hex", 40))
    add("docker-hub-pat", "Docker Hub personal access token", "registry",
        "dckr_pat_" + c("b64u", 27), "docker login -u me --password-stdin <<< {v}")
    add("docker-hub-oat", "Docker Hub organization access token", "registry",
        "dckr_oat_" + c("b64u", 32))
    add("harness-pat", "Harness personal access token", "ci",
        "pat." + c("b64u", 22) + "." + c("an", 24) + "." + c("an", 20))
    add("postman-api-key", "Postman API key", "saas",
        "PMAK-" + c("hex", 24) + "-" + c("hex", 34))
    add("readme-api-key", "ReadMe API key", "saas", "rdme_" + c("al", 70))
    add("infracost-token", "Infracost API token", "ci", "ico-" + c("an", 32))
    add("prefect-key", "Prefect API key", "ci", "pnu_" + c("an", 36))
    add("scalingo-token", "Scalingo API token", "cloud", "tk-us-" + c("b64u", 48))
    add("pulumi-token", "Pulumi access token", "cloud", "pul-" + c("hex", 40))
    # cloud and infrastructure
    add("aws-access-key-id", "AWS access key ID", "cloud", "AKIA" + c("b32", 16))
    add("aws-temporary-key-id", "AWS temporary access key ID", "cloud",
        "ASIA" + c("b32", 16))
    add("aws-bearer-key-id", "AWS STS service bearer key ID", "cloud",
        "ABIA" + c("b32", 16))
    add("aws-context-key-id", "AWS context-specific credential key ID", "cloud",
        "ACCA" + c("b32", 16))
    add("aws-secret-access-key", "AWS secret access key", "cloud", m.b64_of(30),
        "aws_secret_access_key = {v}")
    add("aws-secret-access-key-bare", "AWS secret access key (bare)", "cloud",
        _with_slash(m), "the secret half is {v}")
    add("aws-session-token", "AWS session token", "cloud",
        "IQoJb3JpZ2luX2VjE" + c("b64", 300), "AWS_SESSION_TOKEN={v}")
    add("aws-bedrock-api-key", "Amazon Bedrock API key", "cloud", "ABSK" + c("b64", 132))
    add("amazon-mws-token", "Amazon MWS auth token", "cloud", "amzn.mws." + m.uuid())
    add("gcp-api-key", "Google API key", "cloud", "AIza" + c("b64u", 35))
    add("gcp-oauth-client-secret", "Google OAuth client secret", "cloud",
        "GOCSPX-" + c("b64u", 28))
    add("gcp-oauth-access-token", "Google OAuth access token", "cloud",
        "ya29.a0" + c("b64u", 150), "Authorization: Bearer {v}")
    add("gcp-oauth-refresh-token", "Google OAuth refresh token", "cloud",
        "1//0" + c("b64u", 100))
    add("firebase-fcm-key", "Firebase Cloud Messaging server key", "cloud",
        "AAAA" + c("an", 7) + ":APA91b" + c("b64u", 134))
    add("azure-ad-client-secret", "Azure AD client secret", "cloud",
        c("an", 3) + "8Q~" + c("an", 34))
    add("azure-storage-key", "Azure storage account key", "cloud", m.b64_of(64),
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={v};"
        "EndpointSuffix=core.windows.net")
    add("azure-shared-access-key", "Azure shared access key", "cloud", m.b64_of(32),
        "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=root;"
        "SharedAccessKey={v}")
    add("azure-sas-signature", "Azure shared access signature", "cloud",
        m.b64_of(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"),
        "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&se=2030-01-01&sp=r&sig={v}")
    add("azure-devops-pat", "Azure DevOps personal access token", "cloud", c("b32l", 52),
        "AZURE_DEVOPS_PAT={v}")
    add("digitalocean-pat", "DigitalOcean personal access token", "cloud",
        "dop_v1_" + c("hex", 64))
    add("digitalocean-oauth-token", "DigitalOcean OAuth token", "cloud",
        "doo_v1_" + c("hex", 64))
    add("digitalocean-refresh-token", "DigitalOcean refresh token", "cloud",
        "dor_v1_" + c("hex", 64))
    add("vault-service-token", "HashiCorp Vault service token", "cloud",
        "hvs." + c("b64u", 94), "VAULT_TOKEN={v} vault kv get secret/app")
    add("vault-batch-token", "HashiCorp Vault batch token", "cloud", "hvb." + c("b64u", 150))
    add("vault-legacy-token", "HashiCorp Vault token (legacy)", "cloud",
        "s." + c("an", 24), "vault login {v}")
    add("terraform-cloud-token", "Terraform Cloud API token", "cloud",
        c("an", 14) + ".atlasv1." + c("b64u", 67))
    add("planetscale-token", "PlanetScale service token", "cloud",
        "pscale_tkn_" + c("b64u", 43))
    add("planetscale-oauth-token", "PlanetScale OAuth token", "cloud",
        "pscale_oauth_" + c("b64u", 43))
    add("planetscale-password", "PlanetScale password", "cloud", "pscale_pw_" + c("b64u", 43))
    add("doppler-personal-token", "Doppler personal token", "cloud", "dp.pt." + c("an", 43))
    add("doppler-service-token", "Doppler service token", "cloud",
        "dp.st.prd." + c("an", 40))
    add("doppler-cli-token", "Doppler CLI token", "cloud", "dp.ct." + c("an", 43))
    add("doppler-service-account-token", "Doppler service account token", "cloud",
        "dp.sa." + c("an", 43))
    add("heroku-api-key-v2", "Heroku API key", "cloud", "HRKU-AA" + c("b64u", 58))
    add("heroku-api-key", "Heroku API key (UUID)", "cloud", m.uuid(),
        "HEROKU_API_KEY={v}")
    add("flyio-token", "Fly.io access token", "cloud", "fo1_" + c("b64u", 43))
    add("flyio-macaroon", "Fly.io macaroon token", "cloud", "fm2_" + c("b64", 160),
        "FLY_API_TOKEN=\"FlyV1 {v}\"")
    add("supabase-pat", "Supabase personal access token", "cloud", "sbp_" + c("hex", 40))
    add("supabase-secret-key", "Supabase secret key", "cloud", "sb_secret_" + c("b64u", 31))
    add("cloudflare-origin-ca-key", "Cloudflare Origin CA key", "cloud",
        "v1.0-" + c("hex", 24) + "-" + c("hex", 146))
    add("cloudflare-api-token", "Cloudflare API token", "cloud", c("b64u", 40),
        "CLOUDFLARE_API_TOKEN={v}")
    add("databricks-token", "Databricks access token", "cloud", "dapi" + c("hex", 32))
    add("dynatrace-token", "Dynatrace API token", "cloud",
        "dt0c01." + c("AN", 24) + "." + c("AN", 64))
    add("grafana-cloud-token", "Grafana Cloud API token", "cloud", "glc_" + c("b64", 64))
    add("grafana-service-account-token", "Grafana service account token", "cloud",
        "glsa_" + c("an", 32) + "_" + c("hex", 8))
    add("new-relic-user-key", "New Relic user API key", "monitoring", "NRAK-" + c("AN", 27))
    add("new-relic-insert-key", "New Relic insert key", "monitoring", "NRII-" + c("b64u", 32))
    add("new-relic-browser-key", "New Relic browser API key", "monitoring",
        "NRJS-" + c("hex", 19))
    add("sentry-user-token", "Sentry user auth token", "monitoring",
        "sntryu_" + c("hex", 64))
    add("sentry-org-token", "Sentry organization auth token", "monitoring",
        "sntrys_eyJpYXQiOjE3MDAwMDAwMDAuMCwidXJsIjoiaHR0cHM6Ly9zZW50cnkuaW8iLCJyZWdpb25fdXJs"
        + c("b64", 40) + "_" + c("b64", 43))
    add("datadog-api-key", "Datadog API key", "monitoring", c("hex", 32),
        "DD_API_KEY={v}")
    add("datadog-app-key", "Datadog application key", "monitoring", c("al", 40),
        "datadog_app_key: {v}")
    add("alibaba-access-key-id", "Alibaba Cloud AccessKey ID", "cloud", "LTAI" + c("an", 20))
    add("tencent-secret-id", "Tencent Cloud SecretId", "cloud", "AKID" + c("an", 32))
    add("yandex-api-key", "Yandex Cloud API key", "cloud", "AQVN" + c("b64u", 36))
    add("1password-secret-key", "1Password secret key", "cloud",
        "A3-" + c("AN", 6) + "-" + c("AN", 11) + "-" + c("AN", 5) + "-" + c("AN", 5)
        + "-" + c("AN", 5))
    add("1password-service-token", "1Password service account token", "cloud",
        "ops_eyJ" + c("b64", 300), "OP_SERVICE_ACCOUNT_TOKEN={v}")
    add("clickhouse-secret", "ClickHouse Cloud API secret", "cloud", "4b1d" + c("an", 38))
    add("adobe-client-secret", "Adobe client secret", "saas", "p8e-" + c("an", 32))
    add("tailscale-key", "Tailscale auth key", "cloud",
        "tskey-auth-" + c("an", 12) + "CNTRL-" + c("an", 32))
    add("age-secret-key", "age secret key", "keys", m.age())
    add("kubernetes-client-key", "Kubernetes client key (kubeconfig)", "keys",
        m.b64_of(120), "users:\n- name: admin\n  user:\n    client-key-data: {v}\n")
    # AI
    add("anthropic-api-key", "Anthropic API key", "ai",
        "sk-ant-api03-" + c("b64u", 93) + "AA", "ANTHROPIC_API_KEY={v}")
    add("anthropic-admin-key", "Anthropic admin API key", "ai",
        "sk-ant-admin01-" + c("b64u", 93) + "AA")
    add("anthropic-oauth-token", "Anthropic OAuth token", "ai",
        "sk-ant-oat01-" + c("b64u", 93) + "AA")
    add("openai-project-key", "OpenAI project API key", "ai",
        "sk-proj-" + c("b64u", 74) + "T3BlbkFJ" + c("b64u", 74))
    add("openai-service-account-key", "OpenAI service account key", "ai",
        "sk-svcacct-" + c("b64u", 74) + "T3BlbkFJ" + c("b64u", 74))
    add("openai-admin-key", "OpenAI admin key", "ai",
        "sk-admin-" + c("b64u", 58) + "T3BlbkFJ" + c("b64u", 58))
    add("openai-legacy-key", "OpenAI API key (legacy)", "ai",
        "sk-" + c("an", 20) + "T3BlbkFJ" + c("an", 20))
    add("openrouter-key", "OpenRouter API key", "ai", "sk-or-v1-" + c("hex", 64))
    add("deepseek-key", "DeepSeek API key", "ai", "sk-" + c("hex", 32))
    add("huggingface-token", "Hugging Face access token", "ai", "hf_" + c("aA", 34))
    add("huggingface-org-token", "Hugging Face org token", "ai", "api_org_" + c("aA", 34))
    add("perplexity-key", "Perplexity API key", "ai", "pplx-" + c("an", 48))
    add("xai-key", "xAI API key", "ai", "xai-" + c("an", 80))
    add("groq-key", "Groq API key", "ai", "gsk_" + c("an", 52))
    add("replicate-token", "Replicate API token", "ai", "r8_" + c("an", 37))
    add("langsmith-token", "LangSmith API key", "ai",
        "lsv2_pt_" + c("hex", 32) + "_" + c("hex", 10))
    add("pinecone-key", "Pinecone API key", "ai", "pcsk_" + c("b64u", 64))
    add("nvidia-key", "NVIDIA API key", "ai", "nvapi-" + c("b64u", 64))
    add("elevenlabs-key", "ElevenLabs API key", "ai", "sk_" + c("hex", 48))
    add("cohere-key", "Cohere API key", "ai", c("an", 40), "COHERE_API_KEY={v}")
    add("mistral-key", "Mistral API key", "ai", c("an", 32), "MISTRAL_API_KEY={v}")
    # SaaS, messaging
    add("slack-bot-token", "Slack bot token", "saas",
        "xoxb-" + c("d", 12) + "-" + c("d", 13) + "-" + c("an", 24))
    add("slack-user-token", "Slack user token", "saas",
        "xoxp-" + c("d", 12) + "-" + c("d", 12) + "-" + c("d", 13) + "-" + c("hex", 32))
    add("slack-app-token", "Slack app-level token", "saas",
        "xapp-1-A" + c("AN", 10) + "-" + c("d", 13) + "-" + c("hex", 64))
    add("slack-config-token", "Slack configuration token", "saas",
        "xoxe.xoxp-1-" + c("an", 160))
    add("slack-config-refresh", "Slack configuration refresh token", "saas",
        "xoxe-1-" + c("an", 146))
    add("slack-refresh-token", "Slack refresh token", "saas", "xoxr-" + c("an", 40))
    add("slack-webhook", "Slack incoming webhook URL", "saas",
        "https://hooks.slack.com/services/T" + c("AN", 8) + "/B" + c("AN", 10) + "/"
        + c("an", 24))
    add("slack-workflow-webhook", "Slack workflow webhook URL", "saas",
        "https://hooks.slack.com/workflows/T" + c("AN", 8) + "/A" + c("AN", 10) + "/"
        + c("d", 18) + "/" + c("an", 24))
    add("discord-webhook", "Discord webhook URL", "saas",
        "https://discord.com/api/webhooks/" + c("d", 18) + "/" + c("b64u", 68))
    add("discord-bot-token", "Discord bot token", "saas",
        "MT" + c("b64u", 24) + "." + c("b64u", 6) + "." + c("b64u", 38),
        "DISCORD_BOT_TOKEN={v}")
    add("teams-webhook", "Microsoft Teams webhook URL", "saas",
        "https://acme.webhook.office.com/webhookb2/" + m.uuid() + "@" + m.uuid()
        + "/IncomingWebhook/" + c("hex", 32) + "/" + m.uuid())
    add("telegram-bot-token", "Telegram bot token", "saas",
        c("d", 10) + ":AA" + c("b64u", 33))
    add("twilio-api-key", "Twilio API key", "saas", "SK" + c("hex", 32))
    add("twilio-auth-token", "Twilio auth token", "saas", c("hex", 32),
        "TWILIO_AUTH_TOKEN={v}")
    add("sendgrid-api-key", "SendGrid API key", "saas",
        "SG." + c("b64u", 22) + "." + c("b64u", 43))
    add("mailgun-api-key", "Mailgun API key", "saas", "key-" + c("hex", 32),
        "MAILGUN_API_KEY={v}")
    add("mailchimp-api-key", "Mailchimp API key", "saas", c("hex", 32) + "-us21")
    add("brevo-api-key", "Brevo (Sendinblue) API key", "saas",
        "xkeysib-" + c("hex", 64) + "-" + c("an", 16))
    add("brevo-smtp-key", "Brevo SMTP key", "saas",
        "xsmtpsib-" + c("hex", 64) + "-" + c("an", 16))
    add("postmark-token", "Postmark server token", "saas", m.uuid(),
        "POSTMARK_SERVER_TOKEN={v}")
    add("shopify-access-token", "Shopify access token", "saas", "shpat_" + c("hex", 32))
    add("shopify-custom-app-token", "Shopify custom app token", "saas",
        "shpca_" + c("hex", 32))
    add("shopify-private-app-token", "Shopify private app token", "saas",
        "shppa_" + c("hex", 32))
    add("shopify-shared-secret", "Shopify shared secret", "saas", "shpss_" + c("hex", 32))
    add("notion-token", "Notion integration token", "saas",
        "ntn_" + c("d", 11) + c("an", 35))
    add("notion-token-legacy", "Notion integration token (legacy)", "saas",
        "secret_" + c("an", 43))
    add("linear-api-key", "Linear API key", "saas", "lin_api_" + c("an", 40))
    add("airtable-pat", "Airtable personal access token", "saas",
        "pat" + c("an", 14) + "." + c("hex", 64))
    add("hubspot-private-app-token", "HubSpot private app token", "saas",
        "pat-na1-" + m.uuid())
    add("figma-pat", "Figma personal access token", "saas", "figd_" + c("b64u", 40))
    add("contentful-pat", "Contentful personal access token", "saas",
        "CFPAT-" + c("b64u", 43))
    add("typeform-token", "Typeform personal access token", "saas",
        "tfp_" + c("an", 44) + "_" + c("an", 14))
    add("frameio-token", "Frame.io API token", "saas", "fio-u-" + c("b64u", 64))
    add("mapbox-secret-token", "Mapbox secret token", "saas",
        "sk.eyJ1Ijoi" + c("b64u", 50) + "." + c("b64u", 22))
    add("dropbox-short-lived-token", "Dropbox short-lived access token", "saas",
        "sl." + c("b64u", 135))
    add("maxmind-license-key", "MaxMind license key", "saas",
        c("an", 6) + "_" + c("an", 29) + "_mmk")
    add("facebook-access-token", "Facebook access token", "saas", "EAAC" + c("an", 160))
    add("facebook-app-secret", "Facebook app secret", "saas", c("hex", 32),
        "FACEBOOK_APP_SECRET={v}")
    add("instagram-token", "Instagram access token", "saas", "IGQV" + c("b64u", 160))
    add("twitter-bearer-token", "Twitter (X) bearer token", "saas",
        "AAAAAAAAAAAAAAAAAAAAA" + c("an", 90))
    add("twitter-secret", "Twitter (X) API secret", "saas", c("an", 50),
        "TWITTER_API_SECRET={v}")
    add("algolia-admin-key", "Algolia admin API key", "saas", c("al", 32),
        "ALGOLIA_ADMIN_KEY={v}")
    add("okta-token", "Okta API token", "saas", "00" + c("b64u", 40), "OKTA_API_TOKEN={v}")
    add("zendesk-token", "Zendesk API token", "saas", c("an", 40),
        "zendesk_api_token: {v}")
    add("intercom-token", "Intercom access token", "saas", c("b64u", 60),
        "INTERCOM_ACCESS_TOKEN={v}")
    add("launchdarkly-token", "LaunchDarkly access token", "saas",
        "api-" + m.uuid(), "LAUNCHDARKLY_ACCESS_TOKEN={v}")
    add("snyk-token", "Snyk API token", "saas", m.uuid(), "SNYK_TOKEN={v}")
    add("trello-token", "Trello API token", "saas", c("hex", 64), "TRELLO_TOKEN={v}")
    add("vercel-token", "Vercel access token", "cloud", c("an", 24), "VERCEL_TOKEN={v}")
    add("linode-token", "Linode personal access token", "cloud", c("hex", 64),
        "LINODE_TOKEN={v}")
    add("hetzner-token", "Hetzner Cloud API token", "cloud", c("an", 64),
        "HCLOUD_TOKEN={v}")
    add("wandb-key", "Weights & Biases API key", "ai", c("hex", 40), "WANDB_API_KEY={v}")
    # payments
    add("stripe-secret-key", "Stripe secret key", "payments", "sk_live_" + c("an", 99))
    add("stripe-test-secret-key", "Stripe test secret key", "payments",
        "sk_test_" + c("an", 24))
    add("stripe-restricted-key", "Stripe restricted key", "payments",
        "rk_live_" + c("an", 99))
    add("stripe-webhook-secret", "Stripe webhook signing secret", "payments",
        "whsec_" + c("an", 32), "STRIPE_WEBHOOK_SECRET={v}")
    add("square-access-token", "Square access token", "payments", "sq0atp-" + c("b64u", 22))
    add("square-access-token-v2", "Square access token (EAAA)", "payments",
        "EAAA" + c("b64u", 60))
    add("square-oauth-secret", "Square OAuth secret", "payments", "sq0csp-" + c("b64u", 43))
    add("braintree-access-token", "Braintree access token", "payments",
        "access_token$production$" + c("al", 16) + "$" + c("hex", 32))
    add("flutterwave-secret", "Flutterwave test secret key", "payments",
        "FLWSECK_TEST-" + c("hex", 32) + "-X")
    add("shippo-token", "Shippo API token", "payments", "shippo_live_" + c("hex", 40))
    add("easypost-key", "EasyPost API key", "payments", "EZAK" + c("an", 54))
    add("duffel-token", "Duffel API token", "payments", "duffel_live_" + c("b64u", 43))
    add("plaid-secret", "Plaid secret", "payments", c("al", 30), "PLAID_SECRET={v}")
    # private keys and key files
    for rid, label in (("private-key-rsa", "RSA PRIVATE KEY"),
                       ("private-key-openssh", "OPENSSH PRIVATE KEY"),
                       ("private-key-ec", "EC PRIVATE KEY"),
                       ("private-key-dsa", "DSA PRIVATE KEY"),
                       ("private-key-pkcs8", "PRIVATE KEY"),
                       ("private-key-encrypted", "ENCRYPTED PRIVATE KEY"),
                       ("private-key-pgp", "PGP PRIVATE KEY BLOCK")):
        add(rid, label.title(), "keys", m.pem(label), "my key is\n{v}\nwhat format?")
    json_key = m.pem("PRIVATE KEY", 20).replace("\n", "\\n")
    add("gcp-service-account-key", "Google service account key (JSON)", "keys", json_key,
        '{"type": "service_account", "project_id": "p", "private_key_id": "'
        + c("hex", 40) + '", "private_key": "{v}", "client_email": "a@p.iam.gserviceaccount.com"}')
    putty = _putty(m)
    add("putty-private-key", "PuTTY private key", "keys", putty,
        secret=putty.split("Private-Lines: 6\n")[1].split("\nPrivate-MAC")[0])
    d = m.b64u_of(32)
    add("jwk-private-key", "JSON Web Key (private)", "keys",
        '{"kty": "EC", "crv": "P-256", "x": "' + m.b64u_of(32) + '", "y": "'
        + m.b64u_of(32) + '", "d": "' + d + '"}', secret=d)
    add("wireguard-private-key", "WireGuard private key", "keys", m.b64_of(32),
        "[Interface]\nPrivateKey = {v}\nAddress = 10.0.0.2/32\n")
    add("jwt", "JSON Web Token", "tokens", m.jwt(), "Authorization: Bearer {v}")
    add("jwt-bare", "JSON Web Token (bare)", "tokens", m.jwt())
    add("bearer-token", "Authorization bearer token", "tokens", c("b64u", 40),
        "curl -H 'Authorization: Bearer {v}' https://api.example.com")
    add("basic-auth", "HTTP Basic credentials", "tokens",
        base64.b64encode(("deploy:" + c("an", 16)).encode()).decode(),
        "Authorization: Basic {v}")
    # databases, URLs, command lines, assignments
    pw = _password(m)
    add("url-password-postgres", "password in a postgres:// URL", "db", pw,
        "DATABASE_URL=postgres://app:{v}@db.internal:5432/app")
    add("url-password-redis", "password in a redis:// URL (no user)", "db", _password(m),
        "redis://:{v}@cache.internal:6379/0")
    add("url-password-mongodb", "password in a mongodb+srv:// URL", "db", _password(m),
        "mongodb+srv://admin:{v}@cluster0.abcde.mongodb.net/test")
    add("url-password-https", "password in an https:// URL", "db", _password(m),
        "git clone https://deploy:{v}@git.example.com/team/repo.git")
    add("cli-mysql-password", "mysql -pPASSWORD", "db", _password(m),
        "mysql -h db -u root -p{v} app < dump.sql")
    add("cli-mysql-password-long", "mysql --password=", "db", _password(m),
        "mysqldump --user=root --password={v} app > app.sql")
    add("cli-sshpass-password", "sshpass -p", "db", _password(m),
        "sshpass -p '{v}' ssh deploy@host uptime")
    add("cli-registry-login-password", "docker login -p", "db", _password(m),
        "docker login -u deploy -p {v} registry.example.com")
    add("cli-curl-user", "curl -u user:password", "db", _password(m),
        "curl -u admin:{v} https://jenkins.example.com/api/json")
    add("cli-redis-password", "redis-cli -a", "db", _password(m),
        "redis-cli -h cache -a {v} ping")
    add("cli-smbclient-password", "smbclient -U user%password", "db", _password(m),
        "smbclient //fs/share -U alice%{v}")
    add("cli-openssl-password", "openssl pass:", "db", _password(m),
        "openssl rsa -in k.pem -passin pass:{v} -out plain.pem")
    add("cli-ldap-password", "ldapsearch -w", "db", _password(m),
        "ldapsearch -x -D cn=admin,dc=ex,dc=com -w {v} -b dc=ex,dc=com")
    add("password-assignment", "password= in a .env file", "db", _password(m),
        "DB_PASSWORD={v}")
    add("password-yaml", "password: in YAML", "db", _password(m),
        "database:\n  user: app\n  password: {v}\n")
    add("password-json", '"password": in JSON', "db", _password(m),
        '{"user": "app", "password": "{v}"}')
    add("password-prose", "a password in a sentence", "db", _password(m),
        "the staging password is {v} if you need it")
    add("secret-assignment", "SECRET_KEY= in settings", "generic", c("an", 50),
        "SECRET_KEY = '{v}'")
    add("client-secret", "client_secret in JSON", "generic", c("b64u", 40),
        '{"client_id": "abc", "client_secret": "{v}"}')
    add("api-key-header", "X-API-Key header", "generic", c("an", 32),
        "curl -H 'X-API-Key: {v}' https://api.example.com/v1")
    add("connection-string-password", "Password= in a connection string", "db",
        _password(m), "Server=tcp:db.example.com;Database=app;User ID=sa;Password={v};")
    add("netrc-password", "password in .netrc", "db", _password(m),
        "machine api.example.com login bot password {v}")
    add("pgpassword", "PGPASSWORD=", "db", _password(m), "PGPASSWORD={v} psql -h db app")
    _issue22(m, add)
    return out


def _issue22(m, add):
    """The families issue #22 names as missed, and the rest of gitleaks's default
    rules (facts from its rule list and examples: prefixes, charsets, lengths, the
    contexts its examples use), each in the context a person pastes it in."""
    c = m.chars
    hexa = lambda n: c("hex", n)
    # vendor ids and keys named by the vendor (the assignment forms gitleaks's
    # examples use: fooToken = "...", FOO_TOKEN ::= "...", setProperty("FOO_TOKEN", ..))
    keyed = (("adobe-client-id", "Adobe client ID", 'adobeClientId = "{v}"', hexa(32)),
             ("asana-client-id", "Asana client ID", "ASANA_CLIENT_ID={v}", c("d", 16)),
             ("discord-client-id", "Discord client ID", 'discord_client_id: "{v}"',
              "1" + c("d", 17)),
             ("discord-api-token", "Discord API token", "DISCORD_API_TOKEN={v}", hexa(64)),
             ("dropbox-api-token", "Dropbox API token", "dropboxToken := `{v}`",
              c("al", 15)),
             ("linkedin-client-id", "LinkedIn client ID", "linkedin_client_id = '{v}'",
              c("al", 14)),
             ("looker-client-id", "Looker client ID", 'LOOKER_CLIENT_ID ::= "{v}"',
              c("al", 20)),
             ("messagebird-client-id", "MessageBird client ID",
              "<MessageBirdToken>\n    {v}\n</MessageBirdToken>", m.uuid()),
             ("meraki-api-key", "Cisco Meraki API key", 'merakiKey = "{v}"', hexa(40)),
             ("sidekiq-secret", "Sidekiq Enterprise credentials",
              "BUNDLE_ENTERPRISE__CONTRIBSYS__COM: {v}", hexa(8) + ":" + hexa(8)),
             ("sumologic-access-id", "Sumo Logic access ID",
              'sumologic.accessId = "{v}"', "su" + c("an", 12)),
             ("plaid-client-id", "Plaid client ID", "PLAID_CLIENT_ID={v}", c("al", 24)),
             ("confluent-access-token", "Confluent access token",
              'System.setProperty("CONFLUENT_TOKEN", "{v}")', c("al", 16)),
             ("airtable-api-key", "Airtable API key", "AIRTABLE_API_KEY = {v}",
              c("al", 17)),
             ("privateai-token", "Private AI API token", '"private_ai_token": "{v}"',
              c("al", 32)),
             ("sendbird-access-id", "Sendbird application ID",
              "SENDBIRD_APP_ID={v}", m.uuid().upper()),
             ("sourcegraph-keyed", "Sourcegraph access token", "sourcegraph: {v}",
              hexa(20) + c("HEX", 20)),
             ("snyk-token-xml", "Snyk API token", "<snykToken>\n    {v}\n</snykToken>",
              m.uuid()),
             ("generic-getenv-default", "token as a getenv default",
              ' utils.GetEnvOrDefault("api_token", "{v}")', m.uuid()))
    for rid, name, context, value in keyed:
        add(rid, name, "keyed", value, context)
    # anchored formats
    b32 = lambda n: c("b32", n)
    add("aws-access-key-id-a3t", "AWS access key ID (A3T)", "cloud",
        "A3T" + c("AN", 1) + b32(16))
    add("aws-bedrock-short-lived-key", "Amazon Bedrock short-lived API key", "cloud",
        "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t" + m.b64_of(150).rstrip("="),
        "export AWS_BEARER_TOKEN_BEDROCK={v}")
    add("vault-legacy-token-bare", "HashiCorp Vault service token (s.)", "cloud",
        "s." + c("an", 22) + c("d", 2), "X-Vault-Token header was {v};")
    add("sourcegraph-token", "Sourcegraph access token", "vcs", "sgp_" + hexa(40))
    add("sourcegraph-token-local", "Sourcegraph local access token", "vcs",
        "sgp_local_" + hexa(40))
    add("openshift-user-token", "OpenShift user token", "cloud",
        "sha256~" + c("b64u", 43), "oc login --token={v} --server=https://api.c:6443")
    add("facebook-app-token", "Facebook app access token", "saas",
        c("d", 15) + "|" + c("b64u", 27), '{"facebook access_token":"{v}"}')
    add("stripe-prod-key", "Stripe secret key (prod)", "payments",
        "sk_prod_" + c("an", 24))
    add("stripe-short-restricted-key", "Stripe restricted key (short)", "payments",
        "rk_live_" + c("an", 12))
    add("slack-user-token-xoxe", "Slack user token (xoxe)", "saas",
        "xoxe-" + c("d", 11) + "-" + c("d", 13) + "-" + c("d", 11) + "-"
        + c("an", 30))
    add("slack-legacy-token", "Slack legacy token", "saas",
        "xoxs-" + c("d", 10) + "-" + c("d", 10) + "-" + c("d", 12) + "-" + hexa(16))
    add("slack-legacy-workspace-token", "Slack legacy workspace token", "saas",
        "xoxa-2-" + c("an", 20))
    add("slack-short-refresh-token", "Slack refresh token (short)", "saas",
        "xoxr-" + c("an", 10))
    add("teams-webhook-lower", "Microsoft Teams webhook URL (any hex case)", "saas",
        "https://contoso.webhook.office.com/webhookb2/" + m.uuid(True) + "@" + m.uuid()
        + "/IncomingWebhook/" + c("an", 32) + "/" + m.uuid())
    add("dynatrace-token-lower", "Dynatrace API token", "monitoring",
        "dt0c01." + c("al", 24) + "." + c("al", 64))
    add("flutterwave-encryption-key", "Flutterwave encryption key", "payments",
        "FLWSECK_TEST" + hexa(12))
    add("flutterwave-public-key", "Flutterwave public key", "payments",
        "FLWPUBK_TEST-" + hexa(32) + "-X")
    add("terraform-cloud-token-eq", "Terraform Cloud API token (= in body)", "cloud",
        c("al", 14) + ".atlasv1." + c("al", 30) + "=" + c("b64u", 36))
    add("jwt-base64", "base64-wrapped JSON Web Token", "tokens",
        base64.b64encode(m.jwt().encode()).decode(), "auth: {v}")
    add("nostr-nsec", "Nostr private key", "keys",
        bech32_encode("nsec", [m.rng.randrange(32) for _ in range(52)]),
        "my nostr key: {v}")
    add("bitcoin-wif", "Bitcoin private key (WIF, compressed)", "keys", _wif(m),
        "import this into the wallet: {v}")
    add("bitcoin-wif-uncompressed", "Bitcoin private key (WIF)", "keys",
        _wif(m, compressed=False))
    pem = m.pem("OPENSSH PRIVATE KEY", 8)
    add("ssh-key-base64", "base64 of an OpenSSH private key", "keys",
        base64.b64encode((pem + "\n").encode()).decode(), "SSH_PRIVATE_KEY_B64={v}")
    rsa = m.pem("RSA PRIVATE KEY", 10)
    add("pem-in-json-string", "RSA key in a JSON string (escaped newlines)", "keys",
        rsa.replace("\n", "\\n"), '{"ssh": {"key": "{v}", "user": "deploy"}}')
    # headers, cookies, keyed generic secrets, files
    add("curl-token-header", "curl -H Token:", "tokens", hexa(16),
        'curl -XPOST http://localhost:8080/api/tasks -H "Token: {v}" -d "content=hi"')
    add("curl-api-token-header", "curl --header Api-Token:", "tokens", c("an", 11),
        'curl -X POST --header "Api-Token: {v}" https://api.example.com')
    add("x-auth-token", "X-Auth-Token: header", "tokens", hexa(32),
        "GET /v2/servers HTTP/1.1\nHost: api.example.com\nX-Auth-Token: {v}\n")
    add("basic-auth-opaque", "Authorization: Basic (no user:password inside)", "tokens",
        m.b64_of(45), 'curl -k --header "Authorization: Basic {v}" https://api')
    add("session-cookie", "session cookie", "tokens", c("b64u", 40),
        "curl -b 'theme=dark; session={v}' https://app.example.com/me")
    add("session-cookie-header", "Cookie: sessionid=", "tokens", c("al", 32),
        "Cookie: csrftoken=abc; sessionid={v}")
    add("set-cookie-connect-sid", "Set-Cookie: connect.sid", "tokens",
        "s%3A" + c("b64u", 32) + "." + c("b64u", 43),
        "Set-Cookie: connect.sid={v}; Path=/; HttpOnly")
    add("db-pass-assignment", "db_pass = in code", "db", _password(m),
        'db_pass = "{v}"')
    add("password-comparison", "if password == ...", "db", _password(m),
        'if password == "{v}":\n    grant()')
    add("url-query-api-key", "?api_key= in a URL", "generic", c("an", 32),
        "GET https://api.example.com/v1/forecast?api_key={v}&units=metric")
    add("url-query-access-token", "&access_token= in a URL", "generic", c("b64u", 48),
        "https://graph.example.com/me?fields=id&access_token={v}")
    add("rails-secret-key-base", "Rails secret_key_base", "generic", hexa(128),
        "production:\n  secret_key_base: {v}\n")
    add("yaml-password-block", "password: in a YAML block", "db", _password(m),
        "spring:\n  datasource:\n    url: jdbc:postgresql://db/app\n"
        "    username: app\n    password: {v}\n    driver: org.postgresql.Driver\n")
    add("pgpass-line", ".pgpass line", "db", _password(m),
        "db.internal:5432:appdb:appuser:{v}")
    add("pgpass-wildcard", ".pgpass line (wildcards)", "db", _password(m),
        "*:*:*:postgres:{v}")
    add("nuget-cleartext-password", "NuGet ClearTextPassword", "registry",
        _password(m), '<add key="ClearTextPassword" value="{v}" />')
    add("aws-secret-bare-alnum", "AWS secret access key (bare, letters and digits)",
        "cloud", _aws_alnum(m), "the secret half is {v}")
    add("aws-secret-next-to-key-id", "AWS secret access key next to its key id",
        "cloud", _aws_alnum(m), "AKIA" + b32(16) + " {v}")
    add("aws-credentials-file", "AWS credentials file", "cloud", m.b64_of(30),
        "[default]\naws_access_key_id = AKIA" + b32(16)
        + "\naws_secret_access_key = {v}\n")


def _aws_alnum(m):
    """A 40-character AWS secret key without / or + (about one in four of them)."""
    while True:
        value = m.b64_of(30)
        if "/" not in value and "+" not in value:
            return value


def _wif(m, compressed=True):
    """A Bitcoin private key in wallet import format (base58check of 0x80 | key)."""
    import hashlib
    raw = b"\x80" + m.rng.randbytes(32) + (b"\x01" if compressed else b"")
    raw += hashlib.sha256(hashlib.sha256(raw).digest()).digest()[:4]
    number, out = int.from_bytes(raw, "big"), ""
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    while number:
        number, rest = divmod(number, 58)
        out = alphabet[rest] + out
    return out


def _with_slash(m):
    while True:
        value = m.b64_of(30)
        if "/" in value or "+" in value:
            return value


def _password(m):
    """A password as people choose them when made to: letters, digits, a symbol."""
    word = m.chars("aA", 6) + m.chars("d", 3)
    return word[:4] + m.rng.choice("!#%^*_") + word[4:] + m.chars("an", 3)


def _putty(m):
    public = "\n".join(m.b64_of(48) for _ in range(3))
    private = "\n".join(m.b64_of(48) for _ in range(6))
    return ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me@host\n"
            "Public-Lines: 3\n%s\nPrivate-Lines: 6\n%s\nPrivate-MAC: %s" % (
                public, private, m.chars("hex", 64)))


def _secret_part(value):
    """What of a value is secret: a webhook URL's path, a key block's body."""
    if value.startswith("https://"):
        return value.split("/", 3)[3]
    if "-----BEGIN" in value:
        return value.split("-----", 2)[2].rsplit("-----END", 1)[0].strip()
    return value


def _needle(value):
    """The part of a value that must never be seen in the estate: its random middle
    (no prefix, which a redacted marker or a mask may show)."""
    core = value.replace("\\n", "\n")
    lines = [line for line in core.splitlines() if "-----" not in line and len(line) > 20]
    if len(lines) > 1:
        core = lines[len(lines) // 2]
    start = max(0, len(core) // 2 - 8)
    return core[start:start + 16] if len(core) >= 24 else core[-12:]


def build():
    return recipes(Maker())


def load():
    with open(CORPUS_PATH, encoding="utf-8") as handle:
        return json.load(handle)


def main():
    entries = build()
    os.makedirs(os.path.dirname(CORPUS_PATH), exist_ok=True)
    with open(CORPUS_PATH, "w", encoding="utf-8") as handle:
        json.dump({"seed": SEED, "about": __doc__.split("\n\n")[0],
                   "secrets": entries}, handle, indent=1, sort_keys=True)
        handle.write("\n")
    sys.stdout.write("%d formats written to %s\n" % (len(entries), CORPUS_PATH))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# ---- ordinary code prompts ----------------------------------------------------------

REPO = os.path.dirname(HERE)
CODE_DIR = os.path.join(HERE, "data", "secrets", "code")
PROMPT_BYTES = 20 * 1024
REPO_SOURCES = ("notrest.py", "README.md", "bench/hooks.py", "bench/benchlib.py",
                "install.sh", "bench/estate.py")


def code_prompts(size=PROMPT_BYTES):
    """[(name, prompt)]: ordinary 20 KB code prompts, a question around code that
    talks about tokens, keys and passwords but holds none: each snippet of
    data/secrets/code/ padded with this repository's own source, then chunks of the
    source alone (notrest.py's own rule table among them)."""
    sources = []
    for name in REPO_SOURCES:
        path = os.path.join(REPO, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                sources.append((name, handle.read()))
    filler = "\n".join(text for _name, text in sources)
    out = []
    for index, name in enumerate(sorted(os.listdir(CODE_DIR))):
        with open(os.path.join(CODE_DIR, name), encoding="utf-8") as handle:
            snippet = handle.read()
        start = (index * 37 * 1024) % max(1, len(filler) - size)
        body = snippet + "\n" + filler[start:start + size - len(snippet) - 200]
        out.append((name, _ask(name, body)))
    notrest = dict(sources).get("notrest.py", "")
    for marker in ("# ==== redaction", "# ---- scanners", "# ==== shell parsing",
                   "# ==== paths and globs", "# ==== laws", "# ==== gate",
                   "# ==== sessions", "# ==== packet", "# ==== learn", "# ==== install",
                   "# ==== CLI"):
        start = notrest.find(marker)
        if start >= 0:
            out.append(("notrest.py " + marker[7:], _ask(marker, notrest[start:start + size
                                                                          - 200])))
    for name, text in sources[1:]:
        out.append((name, _ask(name, text[:size - 200])))
    return out


def _ask(name, body):
    return "Please review this (%s) and tell me what breaks:\n```\n%s\n```\n" % (name, body)


def benign():
    with open(os.path.join(HERE, "data", "secrets", "benign.json"), encoding="utf-8") as handle:
        return json.load(handle)["benign"]
