#!/usr/bin/env python3
"""moto's server (moto_server) for the tests, with four changes: a DynamoDB
transaction that is cancelled puts back the items it named, not copies of
its whole tables; and, with IAM enforced, a request's signature is checked
against its query string as it was sent and against the body it was sent
with (none for a GET), and S3's DeleteObjects is authorized key by key.

moto 5.2.1's transact_write_items deep-copies every table a transaction
names, once per item, before it writes anything, and a cancelled transaction
puts those copies back. That costs milliseconds per transaction on an empty
table and tens at a thousand items, so a burst of one account's requests
through the handlers spends its time copying tables; and putting a copy back
undoes what other requests wrote to the same table meanwhile.

Here the transaction keeps a copy of each item it names (or that it was
absent) and of the table's stream position, and a cancellation restores
exactly those: DynamoDB's all-or-nothing, item by item. Everything else,
the checks, the order, the errors and the cancellation reasons, is moto's
code as it is in 5.2.1 (the version scripts/install-deps.sh installs);
another version refuses to start, since the copy below would no longer be
moto's. internal/testkit/testsupport's TestACancelledTransactionChangesNothing holds
this to DynamoDB's semantics.

With IAM enforced (INITIAL_NO_AUTH_ACTION_COUNT), moto 5.2.1 recomputes a
request's SigV4 signature from werkzeug's request.url, which has unescaped
%2F in the query to "/"; the signer encodes "/" in a query value as %2F,
as SigV4 requires, so S3's ListObjectsV2 with a prefix such as
"generations/<id>/" is refused SignatureDoesNotMatch where S3 answers it.
Here the URL moto checks the signature against keeps the query string as it
came (QUERY_STRING); the parameters moto reads from it are the same.

With IAM enforced, moto 5.2.1 recomputes the signature of a request of a
REST service other than S3 (IAMRequest) over its body or, when it has none,
over the parameters moto parsed from it: a GET's query, or, for a GET with
no query, its headers, form-encoded as if they were a body. The signer
signed the empty body the request has, so every such GET (CloudFront's
ListInvalidations, GetInvalidation) is refused SignatureDoesNotMatch where
AWS answers it. Here the signature is checked over the body as it came,
empty or not.

With IAM enforced, moto 5.2.1 authorizes S3's DeleteObjects (POST ?delete)
as s3:DeleteObject on the bucket's ARN, which a policy granting it on
"<bucket>/generations/*" does not match, and then refuses every key. S3
checks s3:DeleteObject on each key's ARN. Here each key is authorized; when
all are allowed the delete goes on as moto's own, and when any is refused
every key is refused (S3 would delete the others: a batch mixing allowed
and refused keys is what no role here sends).

Usage: the same as moto_server, e.g. python3 scripts/moto_server.py -H
127.0.0.1 -p 5000.
"""
import copy
import sys
from typing import Any

from urllib.parse import urlparse, urlunparse

import xmltodict

import moto
import moto.server
from botocore.awsrequest import AWSRequest
from moto.iam.access_control import IAMRequest
from moto.core.responses import BaseResponse
from moto.s3.exceptions import BucketAccessDeniedError, S3AccessDeniedError
from moto.s3.responses import S3Response
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType

MOTO_VERSION = "5.2.1"


class ItemBackup:
    """The items a transaction names, as they were before it wrote any."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, DynamoType, DynamoType | None, Any]] = []
        self.streams: dict[int, tuple[Any, int]] = {}
        self.seen: set[tuple[int, DynamoType, DynamoType | None]] = set()

    def keep(self, backend: DynamoDBBackend, op: dict[str, Any]) -> None:
        table = backend.tables.get(op.get("TableName") or "")
        if table is None:
            return  # moto answers for the missing table
        key = op.get("Key") or op.get("Item") or {}
        if table.hash_key_attr not in key:
            return  # moto refuses it before writing anything
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = None
        if table.range_key_attr is not None:
            if table.range_key_attr not in key:
                return
            range_value = DynamoType(key[table.range_key_attr])
        if (id(table), hash_value, range_value) in self.seen:
            return
        self.seen.add((id(table), hash_value, range_value))
        current = table.get_item(hash_value, range_value)
        self.items.append((table, hash_value, range_value, copy.deepcopy(current)))
        if table.stream_shard is not None and id(table) not in self.streams:
            self.streams[id(table)] = (table.stream_shard, len(table.stream_shard.items))

    def restore(self) -> None:
        for table, hash_value, range_value, before in reversed(self.items):
            if range_value is not None:
                bucket = table.items[hash_value]
                if before is None:
                    bucket.pop(range_value, None)
                else:
                    bucket[range_value] = before
                if not bucket:
                    table.items.pop(hash_value, None)
            elif before is None:
                table.items.pop(hash_value, None)
            else:
                table.items[hash_value] = before
        for shard, length in self.streams.values():
            del shard.items[length:]


def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    # moto 5.2.1's DynamoDBBackend.transact_write_items, with ItemBackup in
    # place of its deep copies of the tables.
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    backup = ItemBackup()
    for item in transact_items:
        _, op = next(iter(item.items()))
        backup.keep(self, op)

    target_items: set[tuple[str, str]] = set()

    def check_unicity(table_name: str, key: dict[str, Any]) -> None:
        item = (str(table_name), str(dict(sorted(key.items()))))
        if item in target_items:
            raise MultipleTransactionsException()
        target_items.add(item)

    errors: list[tuple[str, str, dict[str, Any]] | tuple[None, None, None]] = []
    for item in transact_items:
        original_item: dict[str, Any] | None = None
        if len(list(item.keys())) > 1:
            raise TransactWriteSingleOpException
        try:
            op_type, op = next(iter(item.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                raise ValueError("Unsupported transaction operation")
            table_name = op["TableName"]
            condition_expression = op.get("ConditionExpression")
            expression_attribute_names = op.get("ExpressionAttributeNames")
            expression_attribute_values = op.get("ExpressionAttributeValues")
            return_values_on_condition_check_failure = op.get("ReturnValuesOnConditionCheckFailure")
            if op_type == "Put":
                attrs = op["Item"]
                table = self.get_table(table_name)
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]
            check_unicity(table_name, key)
            current = self.get_item(table_name, key)
            if condition_expression is not None:
                condition_op = get_filter_expression(
                    condition_expression, expression_attribute_names, expression_attribute_values
                )
                if not condition_op.expr(current):
                    if return_values_on_condition_check_failure == "ALL_OLD" and current:
                        original_item = current.to_json()["Attributes"]
                    raise ConditionalCheckFailed(item=original_item)
            if op_type == "Put":
                self.put_item(
                    table_name,
                    op["Item"],
                    condition_expression=condition_expression,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            elif op_type == "Delete":
                self.delete_item(
                    table_name,
                    key,
                    condition_expression=condition_expression,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            elif op_type == "Update":
                self.update_item(
                    table_name,
                    key,
                    update_expression=op["UpdateExpression"],
                    condition_expression=condition_expression,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            backup.restore()
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), original_item))  # type: ignore
        except Exception as e:  # noqa: E722, as moto: any other failure is the item's reason
            errors.append((type(e).__name__, str(e), original_item))  # type: ignore

    if any(code is not None for code, _, _ in errors):
        backup.restore()
        raise TransactionCanceledException(errors)


_setup_class = BaseResponse.setup_class


def setup_class(self: BaseResponse, request: Any, full_url: str, headers: Any, use_raw_body: bool = False) -> None:
    _setup_class(self, request, full_url, headers, use_raw_body)
    raw = getattr(request, "environ", {}).get("QUERY_STRING")
    if raw:
        self.uri = urlunparse(urlparse(self.uri)._replace(query=raw))


def create_aws_request(self: IAMRequest) -> AWSRequest:
    # moto 5.2.1's IAMRequest._create_aws_request, over the body as sent.
    signed_headers = self._get_string_between("SignedHeaders=", ",", self._headers["Authorization"]).split(";")
    headers = self._create_headers_for_aws_request(signed_headers, self._headers)
    request = AWSRequest(method=self._method, url=self._path, data=self._body or b"", headers=headers)
    request.context["timestamp"] = headers["X-Amz-Date"]
    return request


_delete_keys = S3Response._bucket_response_delete_keys


def delete_keys(self: S3Response, bucket_name: str, authenticated: bool = True) -> Any:
    if authenticated:
        return _delete_keys(self, bucket_name, authenticated)
    objects = xmltodict.parse(self.body, strip_whitespace=False).get("Delete", {}).get("Object", [])
    if not isinstance(objects, list):
        objects = [objects]
    try:
        for obj in objects:
            self._authenticate_and_authorize_s3_action(bucket_name=bucket_name, key_name=obj["Key"])
    except (BucketAccessDeniedError, S3AccessDeniedError):
        return _delete_keys(self, bucket_name, False)
    return _delete_keys(self, bucket_name, True)


def main() -> None:
    if moto.__version__ != MOTO_VERSION:
        sys.exit(
            f"scripts/moto_server.py patches moto {MOTO_VERSION}'s transactions, found moto {moto.__version__}: "
            f"pip install 'moto[server]=={MOTO_VERSION}'"
        )
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    BaseResponse.setup_class = setup_class  # type: ignore[method-assign]
    S3Response._bucket_response_delete_keys = delete_keys  # type: ignore[method-assign]
    IAMRequest._create_aws_request = create_aws_request  # type: ignore[method-assign]
    moto.server.main(sys.argv[1:])


if __name__ == "__main__":
    main()
