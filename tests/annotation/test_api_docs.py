"""The API schema and its Swagger UI page: signed-in users only, and the page works under the site's CSP."""

import re

from django.urls import reverse
from rest_framework.authtoken.models import Token

SCRIPT_TAG = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.DOTALL | re.IGNORECASE)


def test_anonymous_visitors_get_neither_the_schema_nor_the_docs(client):
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"] == f"{reverse('login')}?next=/api/docs/"
    assert client.get("/api/docs/?script=").status_code == 302
    schema = client.get("/api/schema/")
    assert schema.status_code == 403 and b"/api/documents/" not in schema.content


def test_an_api_client_with_a_token_gets_the_schema(client, annotator):
    token = Token.objects.create(user=annotator)
    response = client.get("/api/schema/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200 and b"/api/documents/" in response.content


def test_the_docs_page_loads_every_script_from_a_file_under_a_csp_without_unsafe_inline(client, annotator):
    client.force_login(annotator)
    response = client.get("/api/docs/")

    assert response.status_code == 200
    html = response.content.decode()
    scripts = SCRIPT_TAG.findall(html)
    assert len(scripts) == 3
    assert all(" src=" in attributes and not body.strip() for attributes, body in scripts)
    assert "<style" not in html and "style=" not in html
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy

    start = re.search(r'<script src="([^"]*script=[^"]*)"', html).group(1)
    script = client.get(start.replace("&amp;", "&"))
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    body = script.content.decode()
    assert "SwaggerUIBundle(" in body and '"/api/schema/"' in body
