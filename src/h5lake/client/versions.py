"""``h5lake version commit|log|tag|diff|restore|fork|merge|cherry-pick|delete DOMAIN``: versions over REST."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from h5lake.client.common import ToolError, connect, connection_options, explain
from h5lake.client.rest import RestClient, RestError


def _when(ts: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(ts))) + "Z" if ts else "-"


def _run(options: dict[str, Any], domain: str, work: Any) -> Any:
    as_json = options.pop("as_json")
    client = connect(options, domain.split("@")[0], 1)
    try:
        result, text = work(client)
    except RestError as exc:
        raise ToolError(explain(exc, client)) from None
    click.echo(json.dumps(result, indent=2) if as_json else text)


def _json_option(fn: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print the server's JSON reply.")(fn)


def register(group: click.Group) -> None:
    @group.group("version", short_help="Commit, list, compare, fork, merge and restore versions.")
    def version() -> None:
        """Versions of a domain (docs/versions.md). Read one with DOMAIN@REF anywhere a domain
        is accepted: REF is a version id (v3), a tag, ~N, or an ISO 8601 time."""

    @version.command("commit")
    @click.argument("domain")
    @click.option("-m", "--message", default="", help="What changed.")
    @click.option("--metadata", help="A JSON object kept with the version.")
    @click.option("--parent", help="Fail (409) unless this is the latest version.")
    @connection_options
    @_json_option
    def commit(domain: str, message: str, metadata: str | None, parent: str | None, **options: Any) -> None:
        """Make the head of DOMAIN a new version."""
        body: dict[str, Any] = {"message": message}
        if metadata:
            try:
                body["metadata"] = json.loads(metadata)
            except json.JSONDecodeError as exc:
                raise click.UsageError(f"--metadata is not JSON: {exc}") from None
        if parent:
            body["parent"] = parent

        def work(c: RestClient) -> tuple[Any, str]:
            out = c.post_json("/versions", body)
            return out, f"{out['id']}  {_when(out['created'])}  {out['message']}"

        _run(options, domain, work)

    @version.command("log")
    @click.argument("domain")
    @click.option("-n", "--limit", type=int, help="At most this many.")
    @connection_options
    @_json_option
    def log(domain: str, limit: int | None, **options: Any) -> None:
        """List the versions of DOMAIN, newest first."""

        def work(c: RestClient) -> tuple[Any, str]:
            out = c.get_json("/versions", **({"Limit": limit} if limit else {}))
            tags: dict[str, list[str]] = {}
            for t in c.get_json("/versions/tags")["tags"]:
                tags.setdefault(t["version"], []).append(t["name"])
            lines = [
                f"{v['id']}  {_when(v['created'])}  {v['author'] or '-'}  {v['message']}"
                + (f"  [parents {' + '.join(v['parents'])}]" if len(v.get("parents") or []) > 1 else "")
                + (f"  ({', '.join(tags[v['id']])})" if v["id"] in tags else "")
                for v in out["versions"]
            ]
            return out, "\n".join(lines) or "no versions"

        _run(options, domain, work)

    @version.command("tag")
    @click.argument("domain")
    @click.argument("name")
    @click.argument("version_id", required=False)
    @click.option("--delete", is_flag=True, help="Delete the tag instead.")
    @connection_options
    @_json_option
    def tag(domain: str, name: str, version_id: str | None, delete: bool, **options: Any) -> None:
        """Name VERSION_ID (default: the latest) NAME, or delete tag NAME."""

        def work(c: RestClient) -> tuple[Any, str]:
            if delete:
                c.delete(f"/versions/tags/{name}")
                return {"name": name, "deleted": True}, f"deleted tag {name}"
            vid = version_id or c.get_json("/versions", Limit=1)["versions"][0]["id"]
            out = c.put_json(f"/versions/tags/{name}", {"version": vid})
            return out, f"{name} -> {out['version']}"

        _run(options, domain, work)

    @version.command("diff")
    @click.argument("domain")
    @click.argument("from_ref")
    @click.argument("to_ref", required=False)
    @connection_options
    @_json_option
    def diff(domain: str, from_ref: str, to_ref: str | None, **options: Any) -> None:
        """What changed from FROM_REF to TO_REF (default: the head)."""

        def work(c: RestClient) -> tuple[Any, str]:
            out = c.get_json("/versions/diff", **{"from": from_ref, **({"to": to_ref} if to_ref else {})})
            lines = [f"+ {o['path'] or o['id']}" for o in out["added"]]
            lines += [f"- {o['path'] or o['id']}" for o in out["removed"]]
            for o in out["changed"]:
                parts = [f"{k} {', '.join(v)}" for what in ("attributes", "links") for k, v in o.get(what, {}).items() if v]
                if "shape" in o:
                    parts.append(f"shape {o['shape']['from'].get('dims')} -> {o['shape']['to'].get('dims')}")
                if "chunks" in o:
                    parts.append(f"{o['chunks']['count']} chunk(s)")
                lines.append(f"~ {o['path'] or o['id']}: " + "; ".join(parts))
            return out, f"{out['from']} -> {out['to']}\n" + ("\n".join(lines) or "no changes")

        _run(options, domain, work)

    @version.command("restore")
    @click.argument("domain")
    @click.argument("version_id")
    @click.option("--force", is_flag=True, help="Discard uncommitted changes of the head.")
    @connection_options
    @_json_option
    def restore(domain: str, version_id: str, force: bool, **options: Any) -> None:
        """Make the head of DOMAIN equal to VERSION_ID."""

        def work(c: RestClient) -> tuple[Any, str]:
            out = c.post_json(f"/versions/{version_id}/restore", {"force": force})
            return out, f"restored {out['restored']}: {out['objects']} object(s), {out['chunks']} chunk(s) written"

        _run(options, domain, work)

    @version.command("fork")
    @click.argument("domain")
    @click.argument("new_domain")
    @connection_options
    @_json_option
    def fork(domain: str, new_domain: str, **options: Any) -> None:
        """Make NEW_DOMAIN from a version of DOMAIN.

        DOMAIN@REF forks that version; DOMAIN alone forks the head, committed first."""
        source = domain

        def work(c: RestClient) -> tuple[Any, str]:
            c.domain = new_domain
            out = c.put_json("/", {"from": source})
            return out, f"{new_domain}: forked from {source}"

        _run(options, domain, work)

    def _merge_command(name: str, route: str, doc: str) -> None:
        @version.command(name, help=doc)
        @click.argument("domain")
        @click.argument("source")
        @click.option("-m", "--message", default="", help="The new version's message.")
        @click.option("--resolve", "resolve", help='"ours" or "theirs" for every conflict, or a JSON object of object path ("*": the rest) to one of them.')
        @connection_options
        @_json_option
        def command(domain: str, source: str, message: str, resolve: str | None, **options: Any) -> None:
            body: dict[str, Any] = {"from": source, "message": message}
            if resolve:
                try:
                    body["resolve"] = resolve if resolve in ("ours", "theirs") else json.loads(resolve)
                except json.JSONDecodeError as exc:
                    raise click.UsageError(f'--resolve is "ours", "theirs" or JSON: {exc}') from None

            as_json = options.get("as_json")

            def work(c: RestClient) -> tuple[Any, str]:
                response = c.request("POST", route, json=body, ok=(201, 409))
                out = response.json()
                if response.status_code == 409:
                    lines = [f"{x['kind']:9} {x['path']}" + (f" {x['name']}" if x.get("name") else "")
                             + (f" chunks {', '.join(x['chunks'][:20])}" if x.get("chunks") else "")
                             for x in out["conflicts"]]
                    if as_json:
                        raise ToolError(json.dumps(out, indent=2))
                    raise ToolError(f"{out['count']} conflict(s), nothing changed (give --resolve):\n" + "\n".join(lines))
                text = (f"{out['id']}  {out['message']}: {out['objects']} object(s), {out['chunks']} chunk(s) written, "
                        f"{out['elementwise']} merged element-wise")
                return out, text

            _run(options, domain, work)

    _merge_command("merge", "/versions/merge", "Merge SOURCE (a fork of DOMAIN: FORK or FORK@REF) into the head of "
                   "DOMAIN, as a new version with both parents; conflicts fail unless --resolve.")
    _merge_command("cherry-pick", "/versions/cherry-pick", "Apply the change version SOURCE (D@REF: DOMAIN or a fork "
                   "of it) made to its parent to the head of DOMAIN, as a new version.")

    @version.command("delete")
    @click.argument("domain")
    @click.argument("version_id")
    @connection_options
    @_json_option
    def delete(domain: str, version_id: str, **options: Any) -> None:
        """Forget an untagged version of DOMAIN."""

        def work(c: RestClient) -> tuple[Any, str]:
            c.delete(f"/versions/{version_id}")
            return {"id": version_id, "deleted": True}, f"deleted {version_id}"

        _run(options, domain, work)
