"""Secrets: the rule table, the corpus of real formats and benign look-alikes, the
refusal of a prompt that carries one, redaction before every cut, project patterns
from laws.json, and the cost of the scan. The corpus is tests/secret_corpus.py
(generated values, valid check digits) with tests/data/secrets/."""
import binascii
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import REPO, make_project, sample
import secret_corpus
import notrest

CORPUS = secret_corpus.load()["secrets"]
BENIGN = secret_corpus.benign()
CLIENTS = ("claude", "codex")


def sure(text, rules=None):
    return [f for f in notrest.scan_secrets(text, rules) if f.sure]


def refused(text):
    event = notrest.Event(kind="UserPromptSubmit", client="claude", prompt=text)
    verdicts = notrest.decide(notrest.build_lawbook(None), event)
    return [v for v in verdicts if v.law == "secret-in-prompt"]


# ---- the table --------------------------------------------------------------------

def test_the_rule_table_is_data_and_parses():
    ids = set()
    for row in notrest.SECRET_RULES + notrest.SECRET_KEYWORD_RULES + \
            notrest.SECRET_SCANNER_RULES:
        rid, name, anchor, shape, options = row
        assert notrest._is_slug(rid) and name.strip(), row
        rule = notrest.SecretRule(row)
        known = {"ent", "check", "kw", "prev", "infix", "ci", "weak", "mixed", "need",
                 "tail"}
        assert {o.partition("=")[0] for o in options.split()} <= known, row
        if not anchor.startswith("@"):
            for before, after in rule.parsed():
                assert after or before, row
                for segment in before + after:
                    assert isinstance(segment, str) or (segment[1] <= segment[2]), row
            assert anchor or rule.keywords, row
        if "weak" not in options:
            ids.add(rid)
    assert len(ids) >= 150, len(ids)


def test_no_format_is_shorter_than_the_short_text_fast_path():
    """scan_secrets skips texts under 14 characters with no room for NAME=value."""
    for row in notrest.SECRET_RULES:
        rule = notrest.SecretRule(row)
        for before, after in rule.parsed():
            size = len(rule.anchor) + sum(len(s) if isinstance(s, str) else s[1]
                                          for s in before + after)
            assert size >= 14, row


def test_the_corpus_is_broad_and_matches_its_recipes():
    assert [e["id"] for e in CORPUS] == [e["id"] for e in secret_corpus.build()]
    assert CORPUS == json.loads(json.dumps(secret_corpus.build())), \
        "run python3 tests/secret_corpus.py"
    assert len(CORPUS) >= 150 and len({e["id"] for e in CORPUS}) == len(CORPUS)
    assert len(BENIGN) >= 80
    values = " ".join(e["value"] + " " + e["text"] for e in CORPUS)
    # every family issue #12 names
    for mark in ("dop_v1_", "dckr_pat_", "GOCSPX-", "ya29.", "hvs.", "pscale_tkn_",
                 "glpat-", "gldt-", "glrt-", "glptt-", "npm_", "pypi-AgEI", "rubygems_",
                 "shpat_", "ntn_", "sntrys_", "SG.", "xkeysib-", "xapp-",
                 "hooks.slack.com", "whsec_", "sq0csp-", "hf_", "pplx-", "xai-", "gsk_",
                 "AGE-SECRET-KEY-1", "PuTTY-User-Key-File", '"d": "', "PrivateKey = ",
                 "redis://:", "mysql -h db -u root -p", "sshpass -p", "docker login -u",
                 "curl -u admin:", "AccountKey=", "&sig=", "aws_secret_access_key"):
        assert mark in values, mark
    # every family issue #22 names
    for mark in ("adobeClientId", "DISCORD_API_TOKEN", "xoxe-", "xoxs-", "xoxr-", "SG.",
                 "MAILGUN_API_KEY", "webhook.office.com", "xai-", "r8_", "s.", "hvs.",
                 "dt0c01.", "sha256~", "bedrock-api-key-", "FLWSECK_TEST", "FLWPUBK",
                 "EAAA", "sq0atp-", "PuTTY-User-Key-File", "-----BEGIN RSA PRIVATE KEY"
                 "-----\\n", "LS0tLS1CRUdJTi", "nsec1", "ZXlK", "Authorization: Basic",
                 "X-Auth-Token:", "session=", "sessionid=", "connect.sid=", "db_pass =",
                 'if password == "', "?api_key=", "secret_key_base:", "    password: ",
                 ":5432:appdb:appuser:", "*:*:*:postgres:", "the secret half is",
                 "ClearTextPassword", "A3T", "sgp_", "GetEnvOrDefault"):
        assert mark in values, mark
    kinds = {b["why"].split(":")[0] for b in BENIGN}
    assert "gitleaks fp" in kinds


# ---- refusing prompts ---------------------------------------------------------------

def test_every_format_in_the_corpus_is_refused_in_a_prompt():
    missed = [e["id"] for e in CORPUS if not refused(e["text"])]
    assert not missed, "%d of %d formats not refused: %s" % (len(missed), len(CORPUS),
                                                             missed)


def test_no_benign_look_alike_is_refused():
    wrongly = [(b["text"][:60], sure(b["text"])) for b in BENIGN if refused(b["text"])]
    assert not wrongly, wrongly


def test_no_benign_look_alike_is_redacted():
    """A redacted SHA or UUID is lost evidence: benign text is kept as it is."""
    wrongly = [(b["text"][:60], notrest.scan_secrets(b["text"])) for b in BENIGN
               if notrest.redact_secrets(b["text"]) != b["text"]]
    assert not wrongly, wrongly


def _aws_key(seed, alnum):
    maker = secret_corpus.Maker(seed)
    while True:
        value = maker.b64_of(30)
        if alnum == ("/" not in value and "+" not in value):
            return value


def test_a_bare_aws_secret_key_is_refused_when_sure_and_redacted_when_likely():
    """Three outcomes in one pass: next to a key id or an AWS word the 40-character
    secret is certain; alone, its mix and entropy decide between refuse and redact;
    the look-alikes are kept."""
    key_id = "AKIA" + secret_corpus.Maker(9).chars("b32", 16)
    for seed in range(12):
        alnum, mixed = _aws_key(seed, True), _aws_key(seed, False)
        for text in ("%s %s" % (key_id, alnum), "my aws secret: %s" % alnum,
                     "aws_secret_access_key=%s" % alnum, "the secret half is %s" % mixed,
                     "here: %s" % alnum):
            assert refused(text), text
            assert alnum not in notrest.redact_secrets(text) or mixed in text
    # likely, not sure: letters and digits alone, with a flat mix (redact, keep going)
    likely = "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUiOpAs1D"      # one digit only
    assert not refused("the value was " + likely)
    assert likely not in notrest.redact_secrets("the value was " + likely)
    # hard negatives: no finding at all
    import base64
    import hashlib
    for text in (hashlib.sha1(b"x").hexdigest(), "c" + hashlib.sha1(b"y").hexdigest()[1:],
                 base64.b64encode(b"Lorem ipsum dolor sit amet, consec").decode(),
                 "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn",
                 "ThisIsAVeryLongIdentifierNameForTesting",
                 "sha512-" + base64.b64encode(hashlib.sha512(b"z").digest()).decode()):
        assert notrest.scan_secrets("value: " + text) == (), text


def test_header_cookie_and_file_forms_are_refused_and_their_look_alikes_kept():
    for text, value in (
            ('curl -H "Token: 3fea6af1349166ea" https://x', "3fea6af1349166ea"),
            ("Cookie: a=b; sessionid=q8w7e6r5t4y3u2i1o9p8a7s6d5f4g3h2", "q8w7e6r5t4y3u2i1"),
            ("db.internal:5432:app:app:Tr0ub4dor&3x", "Tr0ub4dor&3x"),
            ('if password == "Tr0ub4dor&3x":', "Tr0ub4dor&3x"),
            ('<add key="ClearTextPassword" value="Tr0ub4dor&3x" />', "Tr0ub4dor&3x")):
        assert refused(text), text
        assert value not in notrest.redact_secrets(text), text
    for text in ('curl -H "Accept: application/json" https://x', "Cookie: theme=dark",
                 "localhost:5432:*:postgres:*", 'if password == "":',
                 '<add key="ApiUrl" value="https://api.example.com" />'):
        assert notrest.redact_secrets(text) == text, text


def test_ordinary_20kb_code_prompts_are_neither_refused_nor_redacted():
    prompts = secret_corpus.code_prompts()
    assert len(prompts) >= 19
    for name, prompt in prompts:
        assert not refused(prompt), (name, sure(prompt))
        assert notrest.redact_secrets(prompt) == prompt, (
            name, notrest.scan_secrets(prompt))


STDLIB_MODULES = ("ftplib", "urllib/request", "smtplib", "imaplib", "poplib",
                  "http/client", "http/cookies", "http/cookiejar", "netrc", "getpass",
                  "hashlib", "hmac", "secrets", "ssl", "base64", "uuid", "json/decoder",
                  "email/utils", "logging/handlers", "xmlrpc/client", "configparser",
                  "urllib/parse", "http/server", "mailbox", "zipfile", "tarfile",
                  "subprocess", "shutil")


def test_20kb_chunks_of_the_standard_library_are_not_refused():
    """Library code that talks about passwords and keys (ftplib's anonymous@,
    urllib's doc example geheim$parole, __all__ lists of *Password* names) holds no
    secret a person pasted: no chunk is refused."""
    import os
    lib = os.path.dirname(os.__file__)
    wrongly = []
    for module in STDLIB_MODULES:
        path = os.path.join(lib, module + ".py")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for offset in range(0, len(text), 20480):
            prompt = "Please review this:\n```\n%s\n```\n" % text[offset:offset + 20480]
            if refused(prompt):
                wrongly.append((module, offset, sure(prompt)))
    assert not wrongly, wrongly


def test_code_references_digests_and_ids_are_left_alone():
    for text in ('api_key = os.environ["API_KEY"]', "token = tokens[i]",
                 "self.access_token = access_token", "password: ${{ secrets.DB }}",
                 "export TOKEN=$TOKEN", "GITHUB_SHA=" + "3f5a9c2e" * 5,
                 "IMAGE_DIGEST=sha256:" + "0b1c2d3e" * 8,
                 "REQUEST_ID=6f1c2a8e-93b4-4d1e-a5f7-2b8c9d0e1f23",
                 "JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64",
                 "secret = get_secret(name)", "{token: refreshToken}",
                 "password = getpass.getpass()", "PWD=/home/me/project"):
        assert notrest.redact_secrets(text) == text, text


def test_the_refusal_names_the_format_and_where_it_is_masked():
    token = "glpat-" + "Ab3dE6gH9jK2mN5pQ8sT"
    prompt = "first line\nsecond line\nthe key: %s ok\n" % token
    verdict = refused(prompt)[0]
    assert "GitLab personal access token" in verdict.reason
    assert "`glpat-\u2026`" in verdict.reason
    col = prompt.split("\n")[2].index(token) + 1
    assert "line 3, characters %d-%d" % (col, col + len(token) - 1) in verdict.reason
    assert token[6:] not in verdict.text() and token[8:14] not in verdict.text()


def test_the_refusal_counts_what_it_does_not_show():
    keys = [secret_corpus.Maker(i).crc_token("ghp_") for i in range(5)]
    reason = refused("\n".join(keys))[0].reason
    assert reason.count("GitHub personal access token") == 3 and "and 2 more" in reason
    assert "lines" not in reason and "line 5" not in reason


def _crc_token(prefix, body):
    return prefix + body + secret_corpus.base62(binascii.crc32(body.encode()), 6)


def test_check_digits_decide_what_is_sure():
    """A random body behind a vendor prefix is refused; a flat one only when its check
    digit holds (so it was made by the vendor's algorithm, not typed as a filler)."""
    flat = "a1" * 15
    for prefix in ("ghp_", "gho_", "npm_"):
        good = _crc_token(prefix, flat)
        assert sure(good), good
        bad = prefix + flat + "000000"
        assert not sure(bad) and notrest.redact_secrets(bad) != bad, bad
    random_bad = secret_corpus.Maker(3).crc_token("ghp_")[:-6] + "000000"
    assert sure(random_bad), "a random token is refused whether its CRC holds or not"
    zero_age = secret_corpus.bech32_encode("age-secret-key-", [0] * 52).upper()
    assert sure(zero_age)
    assert not sure(zero_age[:-1] + ("Q" if zero_age[-1] != "Q" else "P"))
    assert sure(secret_corpus.Maker(4).jwt())
    fake = "eyJ" + "x" * 20 + ".eyJ" + "y" * 20 + "." + "z" * 20
    assert not sure(fake) and notrest.redact_secrets(fake) != fake


def test_typed_fixtures_behind_a_prefix_are_redacted_not_refused():
    """gitleaks counts these as false positives; a typed run cannot prove a fixture, so
    they are redacted (nothing lost) and not refused."""
    for text in ("AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
                 "sk-ant-api03-abc123xyz-456de-klMnopqrstuvwx-3456yza789bcde-1234fghijklmnopAA",
                 "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"):
        assert not refused(text), text
        assert notrest.redact_secrets(text) != text, text


def test_placeholders_and_documentation_keys_are_neither_refused_nor_redacted():
    for text in ("ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "OPENAI_API_KEY=sk-your-key-here",
                 "password=changeme", '"api_key": "<YOUR_API_KEY>"'):
        assert not refused(text), text
    # the keys vendors publish as ones that do not work (gitleaks allows them too) are
    # public text: a tutorial that quotes them is kept whole
    for text in ("AKIAIOSFODNN7EXAMPLE",
                 "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"):
        assert not refused(text) and notrest.redact_secrets(text) == text, text
    assert refused("AKIA" + "IOSFODNN7EXAMPL3")


# ---- the classes the second holdout found (#22): a secret and its look-alike each ---

def _body(der_head, seed, size=600):
    """base64 of a DER head and random bytes: a key body as a person pastes it."""
    import base64
    return base64.b64encode(bytes.fromhex(der_head) +
                            secret_corpus.Maker(seed).rng.randbytes(size)).decode()


def _wrapped(body, width=64, sep="\n"):
    return sep.join(body[i:i + width] for i in range(0, len(body), width))


_PW = "Gq4#vN8zR2xLw7Tb"                  # shaped as a person's password
_TOK = "h3JkP9sWq2Lx7VbN4cZr8TyM6dGf1QaE"  # shaped as a vendor's random token


@pytest.mark.parametrize("text,value", [
    ("$db_pass = '%s';" % _PW, _PW),                                    # PHP
    ('my $api_secret = "%s";' % _TOK, _TOK),                            # Perl
    ('[string]$Password = "%s"' % _PW, _PW),                            # PowerShell
    ('if [ "$ADMIN_PASSWORD" = "%s" ]; then' % _PW, _PW),               # sh test
    ('db_password <- "%s"' % _PW, _PW),                                 # R
    ('Dim smtpPassword As String = "%s"' % _PW, _PW),                   # VB
    ('let apiToken: String = "%s"' % _TOK, _TOK),                       # Swift
    ('password: str = "%s"' % _PW, _PW),                                # Python typed
    ("CREATE USER app IDENTIFIED BY '%s';" % _PW, _PW),                 # SQL
])
def test_assignments_in_more_languages_are_refused_and_redacted(text, value):
    assert refused(text), text
    assert value not in notrest.redact_secrets(text), text


@pytest.mark.parametrize("text", [
    "$password = $_POST['password'];", "$db_pass = getenv('DB_PASS');",
    "echo $DB_PASSWORD | docker login --password-stdin", "[ -n \"$PASSWORD\" ]",
    "token <- Sys.getenv('GITHUB_PAT')", "val password: String = BuildConfig.PASSWORD",
    "Dim password As String = txtPassword.Text", "$password = 'password';",
    "IDENTIFIED BY PASSWORD '*94BDCEBE19083CE2A1F959FD02F964C7AF4CFC29'",
])
def test_variables_and_lookups_in_those_languages_are_kept(text):
    assert not refused(text) and notrest.redact_secrets(text) == text, text


@pytest.mark.parametrize("text", [
    "curl -H 'X-Tempo-Team: %s' https://api.tempo.dev/v1/events" % _TOK,
    "curl --header \"X-Acme-Auth: %s\" https://acme.dev" % _TOK,
    "requests.post(url, headers={'X-Shipyard-Key': '%s'})" % _TOK,
    'fetch(url, {headers: {"x-ledger-token": "%s"}})' % _TOK,
    "GET /v2/jobs HTTP/1.1\nHost: api.orbit.io\nX-Orbit-Secret: %s\n" % _TOK,
    "2026-01-04 12:00:01 request headers X-Vendor-License: %s sent" % _TOK,
    "curl -H 'X-TrackerToken: %s' https://tracker.dev/services/v5/me" % _TOK,
])
def test_a_header_whose_name_promises_a_credential_is_refused(text):
    """A general rule for X-... names: the last word (Key, Token, Auth, Secret, Team,
    License) says the value is a credential, whatever the vendor."""
    assert refused(text), text
    assert _TOK not in notrest.redact_secrets(text), text


@pytest.mark.parametrize("text", [
    "X-Request-Id: %s" % _TOK, "X-Idempotency-Key: %s" % _TOK,
    "X-Public-Key: %s" % _TOK, "X-Team-Name: platform-infra",
    "curl -H 'X-Api-Key: $ACME_KEY' https://acme.dev",
    "curl -H 'X-Auth-Token: <your token>' https://acme.dev",
    "X-Hub-Signature-256: sha256=%s" % ("5d" * 32), "max-width: 40px; box-key: 1",
    "X-Monkey: %s" % _TOK,
])
def test_headers_that_carry_no_credential_are_kept(text):
    assert not refused(text) and notrest.redact_secrets(text) == text, text


@pytest.mark.parametrize("text,body", [
    ("the deploy key, base64: %s" % _body("6f70656e7373682d6b65792d763100000000046e6f6e65"
                                          "000000046e6f6e65000000000000000100000033", 1),
     None),                                                             # OpenSSH
    ("lines of the key:\n%s\nthanks", "3082025c02010002818100"),        # PKCS#1 RSA
    ("k = %s", "308204bd020100300d06092a864886f70d0101010500048204a7"),  # PKCS#8 RSA
    ("ed25519 seed: %s", "302e020100300506032b657004220420"),          # PKCS#8 Ed25519
    ("ec: %s", "30770201010420"),                                       # SEC1 EC
    ('{"key": "%s"}', "3082051c304e06092a864886f70d01050d3041"),        # encrypted PKCS#8
])
def test_a_private_key_body_without_its_armour_is_refused_and_redacted_whole(text, body):
    if body is not None:
        value = _body(body, 2)
        pasted = _wrapped(value, sep="\\n") if text.startswith("{") else \
            _wrapped(value) if "\n" in text else value
        text = text % pasted
        pieces = [value[i:i + 24] for i in range(0, len(value) - 24, 64)]
    else:
        pieces = [text.split(": ")[1][i:i + 24] for i in range(20, 600, 64)]
    assert refused(text), text[:80]
    out = notrest.redact_secrets(text)
    assert "[REDACTED:private-key-body]" in out
    assert not [p for p in pieces if p in out], out[:200]


def test_the_private_lines_of_a_ppk_without_its_first_line_are_refused():
    maker = secret_corpus.Maker(4)
    lines = [maker.b64_of(48) for _ in range(5)]
    text = "the rest of the file:\nPrivate-Lines: 5\n%s\nPrivate-MAC: %s" % (
        "\n".join(lines), "ab" * 32)
    assert refused(text)
    out = notrest.redact_secrets(text)
    assert not [line for line in lines if line[:24] in out], out


@pytest.mark.parametrize("der_head", [
    "30820122300d06092a864886f70d01010105000382010f003082010a0282010100",  # SPKI public
    "3082037730820265a003020102020900",                                    # certificate
    "3059301306072a8648ce3d020106082a8648ce3d03010703420004",              # EC public
])
def test_public_key_and_certificate_bodies_are_kept(der_head):
    for text in ("the body:\n%s" % _wrapped(_body(der_head, 3)),
                 "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%s me@host" % _TOK,
                 "base64 of text: " + __import__("base64").b64encode(
                     b"0 1 2 Monday, the meeting moved to the big room, " * 3).decode()):
        assert not refused(text) and notrest.redact_secrets(text) == text, text[:80]


_SITE = "6Lc" + "Q" + _TOK[:4] + "AAAAA" + _TOK[4:31]          # a reCAPTCHA key's shape


@pytest.mark.parametrize("text", [
    '<div class="h-captcha g-recaptcha" data-sitekey="%s"></div>' % _SITE,
    "RECAPTCHA_SITE_KEY=%s" % _SITE,
    "grecaptcha.execute('%s', {action: 'login'})" % _SITE,
    '<script src="https://www.google.com/recaptcha/api.js?render=%s"></script>' % _SITE,
    'const stripe = Stripe("pk_live_51Mx%s%s");' % (_TOK, _TOK[:20]),
    "STRIPE_PUBLISHABLE_KEY=pk_test_51Mx%s%s" % (_TOK, _TOK[:20]),
    'mapboxgl.accessToken = "pk.eyJ1IjoiYWNtZSIsImEiOiJjbHgwMnE3OWgwMDFmIn0.%s";' % _TOK,
    "NEXT_PUBLIC_ANALYTICS_KEY=phc_%s%s" % (_TOK, _TOK[:11]),
])
def test_publishable_and_site_keys_are_kept(text):
    """Public site keys and publishable keys are made to be in a page."""
    assert not refused(text) and notrest.redact_secrets(text) == text, text


@pytest.mark.parametrize("text,value", [
    ("RECAPTCHA_SECRET_KEY=%s" % _SITE, _SITE),
    ('curl -d "secret=%s&response=x" https://www.google.com/recaptcha/api/siteverify'
     % _SITE, _SITE),
    ("STRIPE_SECRET_KEY=sk_live_51Mx%s%s" % (_TOK, _TOK[:20]), _TOK),
    ('mapbox_token = "sk.eyJ1IjoiYWNtZSIsImEiOiJjbHgwMnE3OWgwMDFmIn0.%s"' % _TOK[:22],
     _TOK[:22]),
])
def test_the_secret_halves_of_those_vendors_are_refused(text, value):
    assert refused(text), text
    assert value not in notrest.redact_secrets(text), text


@pytest.mark.parametrize("text", [
    "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "export AWS_ACCESS_KEY_ID=AKIAI44QH8DHBEXAMPLE",
    "the docs show je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY as the secret",
    "SLACK_BOT_TOKEN=xoxb-not-a-real-token-this-will-not-work",
])
def test_vendors_documented_example_values_are_kept(text):
    assert not refused(text) and notrest.redact_secrets(text) == text, text


@pytest.mark.parametrize("text", [
    "SECRET: vault:secret/data/billing#api_key",
    "DB_PASSWORD: ref+vault://kv/prod/db#/password",
    "password: ${{ secrets.DB_PASSWORD }}", "API_TOKEN=op://Deploy/acme/credential",
    "secret_arn = arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-Ab12Cd",
    "DB_PASSWORD=arn:aws:ssm:us-east-1:123456789012:parameter/prod/db/password",
    'api_key = "projects/acme-prod/secrets/api-key/versions/latest"',
    "DB_PASSWORD: '{{resolve:secretsmanager:prod/db:SecretString:password}}'",
    "SMTP_PASSWORD=env:MAILER_PASSWORD",
])
def test_references_to_a_secret_store_are_pointers_and_kept(text):
    assert not refused(text) and notrest.redact_secrets(text) == text, text


def test_a_password_that_only_starts_like_a_reference_is_still_one():
    text = "DB_PASSWORD=vault:%s" % _PW
    assert refused(text) and _PW not in notrest.redact_secrets(text)


def test_the_new_classes_through_the_prompt_hook(proj):
    """The real hook: the PHP password is refused with why and what to do instead,
    the site key passes and reaches the journal whole."""
    secret = "<?php\n$db_password = '%s';" % _PW
    result = proj.hook("UserPromptSubmit", proj.payload("UserPromptSubmit", "n1",
                                                        prompt=secret))
    assert result.answer.get("decision") == "block"
    reason = result.answer["reason"]
    assert "secret-in-prompt" in reason and "password" in reason.lower()
    assert _PW not in reason and _PW not in result.stderr
    benign = '<div class="g-recaptcha" data-sitekey="%s"></div> ticket WEB-4411' % _SITE
    result = proj.hook("UserPromptSubmit", proj.payload("UserPromptSubmit", "n2",
                                                        prompt=benign))
    assert result.answer.get("decision") != "block"
    data = b"".join(p.read_bytes() for p in estate_files(proj))
    assert _SITE.encode() in data and b"WEB-4411" in data
    assert _PW.encode() not in data


# ---- redaction ----------------------------------------------------------------------

def test_every_format_is_redacted_whole_and_its_context_kept():
    leaks = []
    for entry in CORPUS:
        out = notrest.redact_secrets(entry["text"])
        if entry["needle"] in out or "[REDACTED:" not in out:
            leaks.append(entry["id"])
    assert not leaks, leaks
    assert notrest.redact_secrets("DB_PASSWORD=Xy7#k2Lm9q") == \
        "DB_PASSWORD=[REDACTED:password]"


def _pieces(value, size=12):
    """Pieces of the secret part of a value."""
    return {value[i:i + size] for i in range(0, max(1, len(value) - size), 5)
            if len(set(value[i:i + size])) > 5 and "\n" not in value[i:i + size]}


def test_redact_clip_never_keeps_part_of_a_secret_across_the_cut():
    """The value starts just before the cut (head cuts) or ends just after it (tail
    cuts), at several depths: what is kept holds no piece of it."""
    for entry in CORPUS:
        value, text = entry["value"], entry["text"]
        at = text.find(value)
        pieces = _pieces(entry["secret"])
        for limit in (40, 120, 400):
            for depth in (1, 5, len(value) // 2, len(value) - 3):
                pad = limit - depth - at
                if pad >= 0:
                    head = ("x" * (pad - 1) + " " if pad else "") + text
                    kept = notrest.redact_clip(head, limit)
                    assert len(kept) <= limit
                    assert not [p for p in pieces if p in kept], (entry["id"], kept)
                after = len(text) - at - len(value)
                pad = limit - depth - after
                if pad >= 0:
                    tail = text + (" y" * pad)[:pad]
                    kept = notrest.redact_clip(tail, limit, tail=True)
                    assert len(kept) <= limit
                    assert not [p for p in pieces if p in kept], (entry["id"], kept)


def test_redact_clip_keeps_both_ends_with_every_secret_redacted():
    token = secret_corpus.Maker(6).crc_token("ghp_")
    text = "x" * 90 + " " + token + " " + "y" * 500 + " " + token + " " + "z" * 95
    out = notrest.redact_clip(text, 100, ends=True)
    head, _, tail = out.partition("\n[\u2026 ")
    assert head.startswith("x" * 90) and len(head) == 100 and token[:8] not in out
    assert tail.endswith("z" * 95) and "characters cut" in tail
    assert not [p for p in _pieces(token[4:], 6) if p in out]
    assert head.endswith("[REDACTED") and tail.split("\n", 1)[1] == "pat] " + "z" * 95
    short = "a " + token
    assert notrest.redact_clip(short, 100, ends=True) == "a [REDACTED:github-pat]"


def test_redact_record_reaches_every_string():
    token = secret_corpus.Maker(5).crc_token("ghp_")
    record = {"a": token, "b": [token, {"c": token}], "n": 3, "k": None}
    out = json.dumps(notrest.redact_record(record))
    assert token[4:20] not in out and out.count("[REDACTED:github-pat]") == 3


def test_each_text_is_scanned_once(monkeypatch, tmp_path):
    calls = []
    original = notrest._scan_for_secrets

    def counting(text, extra):
        calls.append(len(text))
        return original(text, extra)

    monkeypatch.setattr(notrest, "_scan_for_secrets", counting)
    notrest._SCAN_MEMO.clear()
    prompt = secret_corpus.code_prompts()[0][1]
    event = notrest.Event(kind="UserPromptSubmit", client="claude", prompt=prompt)
    notrest.decide(notrest.build_lawbook(None), event)
    clipped = notrest.redact_clip(prompt, notrest.JOURNAL_TEXT_MAX)
    notrest.redact_record({"text": clipped, "k": "prompt"})
    assert calls.count(len(prompt)) == 1, calls
    assert len(calls) <= 2, calls      # the prompt, and at most one short string


def test_no_re_import_for_the_built_in_rules():
    prompt = secret_corpus.code_prompts()[0][1]
    token = secret_corpus.Maker(9).crc_token("ghp_")
    code = ("import sys; sys.path.insert(0, %r); import notrest; "
            "notrest.find_secrets(%r, True); notrest.redact_record({'w': %r}); "
            "print('re' in sys.modules, 'json' in sys.modules)" % (
                str(REPO), prompt, "curl -u me:Xy7k2Lm9 " + token))
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


@pytest.mark.parametrize("hostile", [
    "sk-" * 7000, "ghp_" * 5000, "password=" * 2300, "://" * 7000,
    "-----BEGIN PRIVATE KEY-----\n" * 700, "a" * 20000 + "=" + "b" * 20000,
    "Bearer " * 3000, "mysql -p" * 2500, '{"kty": "' * 2000, "AKIA" * 5000,
    ("x" * 39 + "/") * 500, "key: " * 4000 + "value",
], ids=lambda text: "%r*%d" % (text[:12], len(text)))
def test_the_scan_is_fast_on_hostile_text(hostile):
    start = time.process_time()  # CPU time: a loaded machine is slow, not wrong
    notrest._SCAN_MEMO.clear()
    notrest.redact_secrets(hostile)
    assert time.process_time() - start < 3.0


# ---- project patterns -------------------------------------------------------------

def test_project_patterns_are_rules_and_bad_ones_are_reported():
    rules, problems = notrest.compile_secret_patterns([
        {"id": "acme-key", "name": "ACME API key", "prefix": "acme_", "charset": "alnum",
         "min": 32, "max": 40},
        {"id": "acme-legacy", "name": "ACME legacy key", "regex": r"ACME-[0-9]{4}-([A-Z]{12})",
         "keywords": ["acme-"]},
        {"id": "bad", "regex": "(a+)+$"},
        {"id": "bad2", "regex": "("},
        {"id": "bad3", "prefix": "ab"},
        {"id": "Not A Slug"},
    ])
    assert [r.id for r in rules] == ["acme-key", "acme-legacy"]
    assert len(problems) == 4 and problems[0].startswith("secret pattern bad: `regex`")
    assert "prefix" in problems[2] and "slug" in problems[3]
    key = "acme_" + "Q7w9E2r4T6y8U1i3O5p7A9s2D4f6G8h0"
    found = sure("use %s now" % key, rules)
    assert [f.name for f in found] == ["ACME API key"]
    legacy = "old ACME-2019-QWERTYUIOPAS here"
    out = notrest.redact_secrets(legacy, rules)
    assert out == "old ACME-2019-[REDACTED:acme-legacy] here"
    assert not sure("use %s now" % key), "patterns apply only where given"


@pytest.mark.parametrize("pattern", [
    "(a+)+", "(a|aa)*", r"(\w+)*x", "a.*.*.*b", "[", "x" * 1200,
], ids=lambda p: p[:12])
def test_catastrophic_regexes_are_refused(pattern):
    """laws.json regexes share one validator (regex_problem): what it refuses for a
    law it refuses for a secret pattern."""
    problem = notrest.regex_problem(pattern)
    assert problem
    rules, problems = notrest.compile_secret_patterns([{"id": "p", "regex": pattern}])
    assert not rules and problems == ["secret pattern p: `regex` %s" % problem]


@pytest.mark.parametrize("pattern", [r"ACME-[0-9]{4}-[A-Z]{12}", r"\bacme_[a-z0-9]{32}\b",
                                     r"(?:foo|bar)_[0-9a-f]{40}", r"key=([^&\s]{20,64})"])
def test_ordinary_regexes_pass(pattern):
    assert notrest.regex_problem(pattern) is None


def test_laws_json_patterns_refuse_and_redact_through_the_hooks(proj):
    laws = json.loads((proj.root / ".notrest" / "laws.json").read_text())
    laws["secret_patterns"] = [{"id": "acme-key", "name": "ACME API key",
                                "prefix": "acme_", "charset": "alnum", "min": 32}]
    (proj.root / ".notrest" / "laws.json").write_text(json.dumps(laws))
    key = "acme_" + "Q7w9E2r4T6y8U1i3O5p7A9s2D4f6G8h0"
    for client in CLIENTS:
        result = proj.hook("UserPromptSubmit", proj.payload(
            "UserPromptSubmit", "pat-" + client, client, prompt="deploy with " + key),
            client)
        assert result.answer["decision"] == "block", result.stdout
        assert "ACME API key (`acme_\u2026`" in result.answer["reason"]
        assert "ACME API key" in result.stderr
        proj.hook("PostToolUse", proj.payload(
            "PostToolUse", "pat-" + client, client, tool_name="Bash",
            tool_input={"command": "deploy --key " + key},
            tool_response={"stdout": ""} if client == "claude" else ""), client)
    assert_absent(proj, [key[5:21]])
    bad = dict(laws, secret_patterns=[{"id": "x", "regex": "(a+)+"}])
    (proj.root / ".notrest" / "laws.json").write_text(json.dumps(bad))
    listed = proj.cli("laws")
    assert "secret pattern x: `regex`" in listed.stdout + listed.stderr


# ---- through the installed hooks, both clients ---------------------------------------

def estate_files(proj):
    roots = [proj.root / ".notrest", proj.home / ".local" / "share" / "notrest"]
    for root in roots:
        if root.exists():
            for path in root.rglob("*"):
                if path.is_file():
                    yield path


def assert_absent(proj, needles):
    found = []
    for path in estate_files(proj):
        data = path.read_bytes()
        for needle in needles:
            if needle.encode() in data or json.dumps(needle)[1:-1].encode() in data:
                found.append((needle, str(path)))
    assert not found, found[:10]


def run_all(jobs, workers=3):
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda job: job(), jobs))


def test_every_corpus_secret_is_refused_by_the_prompt_hook_of_both_clients(proj):
    jobs = []
    for client in CLIENTS:
        for entry in CORPUS:
            payload = proj.payload("UserPromptSubmit", "p-%s-%s" % (client, entry["id"]),
                                   client, prompt=entry["text"])
            jobs.append(lambda c=client, p=payload, e=entry: (
                c, e, proj.hook("UserPromptSubmit", p, c)))
    missed = []
    for client, entry, result in run_all(jobs):
        answer = result.answer
        if answer.get("decision") != "block" or "secret-in-prompt" not in result.stderr:
            missed.append((client, entry["id"]))
    assert not missed, missed
    assert_absent(proj, [e["needle"] for e in CORPUS])


def test_benign_prompts_pass_the_hook_and_reach_the_journal_whole(proj):
    """The look-alikes (SHAs, UUIDs, lock-file hashes, data URIs, gitleaks's own false
    positives) are neither refused by the prompt hook nor redacted in the journal."""
    entries = [b for b in BENIGN if len(b["text"]) <= 400]
    jobs = []
    for client in CLIENTS:
        for i, entry in enumerate(entries):
            payload = proj.payload("UserPromptSubmit", "b-%s-%d" % (client, i), client,
                                   prompt=entry["text"])
            jobs.append(lambda c=client, p=payload, e=entry: (
                c, e, proj.hook("UserPromptSubmit", p, c)))
    refused_ = [(c, e["text"][:60]) for c, e, result in run_all(jobs)
                if result.answer.get("decision") == "block"]
    assert not refused_, refused_
    journal = [path for path in estate_files(proj) if path.suffix != ".py" and
               not {"hooks", "pristine", "__pycache__", "pycache"} & set(path.parts)]
    redacted = [str(path) for path in journal if b"[REDACTED" in path.read_bytes()]
    assert not redacted, redacted
    data = b"".join(path.read_bytes() for path in journal)
    missing = [e["text"][:60] for e in entries
               if json.dumps(e["text"])[1:-1].encode() not in data]
    assert not missing, missing


def test_no_corpus_secret_reaches_the_estate_through_commands_outputs_errors_notes(proj):
    """Each secret goes through a command, a tool output, an error and a note (and for
    Codex the rollout's command and output), for both clients, with the payload
    shapes the clients send: then no file under .notrest/ or the data folder holds
    any part of it."""
    jobs = []
    for client in CLIENTS:
        session = "leak-" + client
        for entry in CORPUS:
            text = entry["text"]
            if client == "claude":
                post = sample("claude-PostToolUse.json", proj.root, session_id=session,
                              tool_name="Bash", tool_input={"command": text},
                              tool_response={"stdout": text, "stderr": text,
                                             "interrupted": False})
                fail = sample("claude-PostToolUseFailure-fail-exit3.json", proj.root,
                              session_id=session, tool_input={"command": text},
                              error="Exit code 1\n" + text)
                jobs.append(lambda p=post: proj.hook("PostToolUse", p, "claude"))
                jobs.append(lambda p=fail: proj.hook("PostToolUseFailure", p, "claude"))
            else:
                post = sample("codex-PostToolUse.json", proj.root, session_id=session,
                              tool_name="Bash", tool_input={"command": text},
                              tool_response="Exit code: 1\nWall time: 0.1 seconds\n"
                                            "Output:\n" + text)
                jobs.append(lambda p=post: proj.hook("PostToolUse", p, "codex"))
        for start in range(0, len(CORPUS), 10):
            group = [e["text"] for e in CORPUS[start:start + 10]]
            args = ["bank", "--session", session, "--note", group[0]]
            if len(group) > 1:
                args += ["--next", group[1]]
            for extra in group[2:]:
                args += ["--open", extra]
            jobs.append(lambda a=args: proj.cli(*a))
    results = run_all(jobs)
    assert all(r.code == 0 for r in results), [r.stderr for r in results if r.code][:3]
    # Codex: the exit codes and outputs come from its rollout file, read at session end
    rollout = proj.home / ".codex" / "sessions" / "rollout-leak-codex.jsonl"
    rollout.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "session_meta", "payload": {}})]
    for i, entry in enumerate(CORPUS):
        item = {"type": "CommandExecution", "id": "call_%d" % i, "exit_code": 1,
                "command": ["/bin/bash", "-lc", entry["text"]], "status": "failed",
                "aggregated_output": entry["text"] + "\n"}
        lines.append(json.dumps({"type": "event_msg", "payload": {
            "type": "item_completed", "item": item}}))
    rollout.write_text("\n".join(lines) + "\n")
    for client in CLIENTS:
        session = "leak-" + client
        start = proj.payload("SessionStart", session, client, source="startup")
        if client == "codex":
            start["transcript_path"] = str(rollout)
        proj.hook("SessionStart", start, client)
        proj.hook("SessionEnd", proj.payload("SessionEnd", session, client,
                                             reason="other"), client)
    codex_journal = proj.journal("leak-codex")
    assert any(r and r.get("k") == "exits" and len(r["items"]) == len(CORPUS)
               for r in codex_journal), "the rollout was not read"
    claude_tools = [r for r in proj.journal("leak-claude") if r and r.get("k") == "tool"]
    assert len(claude_tools) == 2 * len(CORPUS)
    assert all("[REDACTED:" in r["what"] for r in claude_tools)
    assert_absent(proj, [e["needle"] for e in CORPUS])


# ---- redact first, cut after: a secret across every cut of every channel -------------

def _cut_secrets():
    maker = secret_corpus.Maker(21)
    good = maker.crc_token("ghp_")
    unsure = "BLOB=" + maker.chars("an", 44)     # a .env value: redacted, not refused
    return {"github-pat": good, "jwt": maker.jwt(), "unsure-env-value": unsure,
            "url-password": "postgres://app:" + "Kq8#vX2m" + maker.chars("an", 12)
                            + "@db:5432/app",
            "private-key": maker.pem("RSA PRIVATE KEY", 6)}


def _across(limit, secret, depth, filler="w"):
    """Text whose cut at `limit` falls `depth` characters into `secret`."""
    pad = max(0, limit - depth)
    return (filler * max(0, pad - 1) + " ")[:pad] + secret + " and then some words"


def _secret_pieces(secret):
    if "-----BEGIN" in secret:
        secret = secret.split("-----", 2)[2].rsplit("-----END", 1)[0]
    if secret.startswith("BLOB="):
        secret = secret[5:]
    if secret.startswith("postgres://"):
        secret = secret.split(":", 2)[2].split("@")[0]
    return _pieces(secret.replace("\n", ""), 10)


CUTS = [  # channel, limit, which secrets, how the text is sent
    ("bash-command", 400, "sure"), ("read-path", 300, "sure"), ("spawn-description", 200,
                                                                  "sure"),
    ("failure-error", 600, "sure"), ("codex-exit-output", 600, "sure"),
    ("subagent-message", 500, "sure"), ("notification", 500, "sure"),
    ("prompt", 2000, "unsure"), ("bank-note", 1000, "sure"), ("bank-next", 1000, "sure"),
    ("thread", 500, "sure"), ("rollout-command", 400, "sure"),
    ("rollout-output", 300, "tail"), ("check-output", 1500, "tail"),
    ("permit-why", 300, "sure"), ("deny-reason", 120, "sure"),
]


def test_a_secret_across_every_cut_of_every_channel_never_reaches_the_estate(tmp_path):
    proj = make_project(tmp_path)
    secrets = _cut_secrets()
    laws = json.loads((proj.root / ".notrest" / "laws.json").read_text())
    texts, jobs, rollout_items = [], [], []
    for channel, limit, kind in CUTS:
        names = ["unsure-env-value"] if kind == "unsure" else [
            n for n in secrets if n != "unsure-env-value"]
        for name in names:
            secret = secrets[name]
            for depth in (1, 7, len(secret) // 2, len(secret) - 2):
                if kind == "tail":
                    text = "first words " + secret + "\n" + ("z" * max(0, limit - depth))
                else:
                    text = _across(limit, secret, depth)
                texts.append((channel, name, secret, text))
    for i, (channel, name, secret, text) in enumerate(texts):
        session = "cut-%s" % channel
        jobs.extend(_channel_jobs(proj, channel, session, text, i, rollout_items, laws))
    run_all([j for j in jobs if j is not None])
    _after_jobs(proj, rollout_items, laws)
    pieces = set()
    for name, secret in secrets.items():
        pieces |= _secret_pieces(secret)
    assert_absent(proj, sorted(pieces))
    # and the cuts happened where they are said to happen
    journal = proj.journal("cut-bash-command")
    whats = [r["what"] for r in journal if r and r.get("k") == "tool"]
    assert whats and all(len(w) <= 400 for w in whats)
    assert any("[REDACTED:" in w for w in whats)
    prompts = [r["text"] for r in proj.journal("cut-prompt") if r and r.get("k") == "prompt"]
    assert prompts and all(len(p) <= 2000 for p in prompts), "the prompts were refused?"


def _channel_jobs(proj, channel, session, text, i, rollout_items, laws):
    hook, cli = proj.hook, proj.cli
    if channel == "bash-command":
        for event in ("PreToolUse", "PostToolUse"):
            p = proj.payload(event, session, tool_name="Bash",
                             tool_input={"command": "echo " + text},
                             tool_response={"stdout": ""})
            yield lambda e=event, p=p: hook(e, p)
    elif channel == "read-path":
        p = proj.payload("PostToolUse", session, tool_name="Read",
                         tool_input={"file_path": str(proj.root / text)},
                         tool_response={})
        yield lambda p=p: hook("PostToolUse", p)
    elif channel == "spawn-description":
        p = proj.payload("PreToolUse", session, tool_name="Task",
                         tool_input={"description": text, "prompt": "go",
                                     "subagent_type": "general-purpose"})
        yield lambda p=p: hook("PreToolUse", p)
    elif channel == "failure-error":
        p = proj.payload("PostToolUseFailure", session, tool_name="Bash",
                         tool_input={"command": "make"}, error=text)
        yield lambda p=p: hook("PostToolUseFailure", p)
    elif channel == "codex-exit-output":
        p = proj.payload("PostToolUse", session, "codex", tool_name="apply_patch",
                         tool_input={"command": "*** Begin Patch\n*** End Patch\n"},
                         tool_response="Exit code: 1\n" + text)
        yield lambda p=p: hook("PostToolUse", p, "codex")
    elif channel == "subagent-message":
        p = proj.payload("SubagentStop", session, agent_id="a1", agent_type="x",
                         last_assistant_message=text)
        yield lambda p=p: hook("SubagentStop", p)
    elif channel == "notification":
        p = proj.payload("Notification", session, message=text)
        yield lambda p=p: hook("Notification", p)
    elif channel == "prompt":
        p = proj.payload("UserPromptSubmit", session, prompt=text)
        yield lambda p=p: hook("UserPromptSubmit", p)
    elif channel == "bank-note":
        yield lambda: cli("bank", "--session", session, "--note", text)
    elif channel == "bank-next":
        yield lambda: cli("bank", "--session", session, "--next", text)
    elif channel == "thread":
        yield lambda: cli("bank", "--session", session, "--open", text)
    elif channel in ("rollout-command", "rollout-output"):
        rollout_items.append((channel, text, i))
    elif channel == "check-output":
        (proj.root / ("check-%d.out" % i)).write_text(text)
        laws.setdefault("laws", []).append({
            "id": "check-%d" % i, "text": "the check passes", "on": ["Stop"],
            "check": ["/bin/sh", "-c", "cat check-%d.out; exit 1" % i]})
    elif channel == "permit-why":
        yield lambda: cli("allow", "no-destroy", "--once", "--why", text)
    elif channel == "deny-reason":
        p = proj.payload("PreToolUse", session, tool_name="Bash",
                         tool_input={"command": "rm -rf ~/ " + text})
        yield lambda p=p: hook("PreToolUse", p)


def _after_jobs(proj, rollout_items, laws):
    rollout = proj.home / ".codex" / "sessions" / "rollout-cut-rollout.jsonl"
    rollout.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "session_meta", "payload": {}})]
    for channel, text, i in rollout_items:
        command = text if channel == "rollout-command" else "make"
        output = text if channel == "rollout-output" else "ok"
        lines.append(json.dumps({"type": "event_msg", "payload": {
            "type": "item_completed", "item": {
                "type": "CommandExecution", "id": "c%d" % i, "exit_code": 2,
                "command": ["/bin/bash", "-lc", command], "aggregated_output": output}}}))
    rollout.write_text("\n".join(lines) + "\n")
    start = proj.payload("SessionStart", "cut-rollout", "codex", source="startup",
                         transcript_path=str(rollout))
    proj.hook("SessionStart", start, "codex")
    proj.hook("SessionEnd", proj.payload("SessionEnd", "cut-rollout", "codex"), "codex")
    exits = [r for r in proj.journal("cut-rollout") if r and r.get("k") == "exits"]
    assert exits and len(exits[-1]["items"]) == len(rollout_items)
    (proj.root / ".notrest" / "laws.json").write_text(json.dumps(laws))
    session = "cut-check"
    proj.hook("SessionStart", proj.payload("SessionStart", session, source="startup"))
    result = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=False))
    assert result.code == 0, result.stderr
    checks = [r for r in proj.journal(session) if r and r.get("k") == "check"]
    assert len(checks) == len([l for l in laws["laws"] if l["id"].startswith("check-")])


def test_the_generated_heads_are_those_of_the_rule_table():
    """SECRET_HEADS, SECRET_PREFIXES and SECRET_ALWAYS are written into notrest.py
    by tests/regenerate.py from the rules: they must be what the index holds."""
    table = notrest._SecretTable()
    assert notrest.SECRET_HEADS == frozenset(table.by_head)
    assert dict(notrest.SECRET_PREFIXES) == {k: frozenset(v) for k, v in
                                              table.by_prefix.items()}
    assert list(notrest.SECRET_ALWAYS) == table.always
    text = (REPO / "notrest.py").read_text()
    heads, prefixes, always = notrest.secret_heads_source()
    assert "SECRET_HEADS = %s\nSECRET_PREFIXES = %s\nSECRET_ALWAYS = %s\n" % (
        heads, prefixes, always) in text, "run python3 tests/regenerate.py"


def test_a_text_scanned_without_the_index_gives_what_the_index_gives(monkeypatch):
    """A text none of whose word heads is in the index is scanned with the lite
    table (no index built): every corpus secret, alone, in its sentence and bare
    in a line of plain words, and every benign text, gives the same findings as
    with the whole table, and the lite table does serve some of them."""
    texts = [t["text"] for t in BENIGN]
    for case in CORPUS:
        texts += [case["text"], case["secret"], "the value is %s ok" % case["secret"],
                  "x %s" % case["value"]]
    served = []
    lite = notrest._lite_table

    def counted():
        served.append(1)
        return lite()

    def scan_all():
        notrest._SCAN_MEMO.clear()
        return [[(f.start, f.end, f.rule, f.sure) for f in notrest._scan_for_secrets(
            text, ())] for text in texts]

    monkeypatch.setattr(notrest, "_lite_table", counted)
    with_lite = scan_all()
    assert len(served) > 20, len(served)
    monkeypatch.setattr(notrest, "_lite_table", lambda: notrest._secret_table(()))
    assert scan_all() == with_lite
