    // ---- keyed_helpers.js: the helpers every keyed stored procedure shares ----
    // Not a script of its own: this text takes the place of the procedure's marker line, inside
    // its function, both where Bicep deploys it (infra/modules/cosmos.bicep) and where the
    // in-process engine runs it (src/scripts/mod.rs), so the two run the same bytes. Inside,
    // because Cosmos DB takes a stored procedure's body as its one function (see
    // src/scripts/mod.rs). It reads the procedure's `procedure` (its name, for the messages),
    // `postId`, `request`, `collection` and `response`. ES5 only.

    // The record of an Idempotency-Key (src/app/idempotency.rs), when the caller sent one: read
    // first, so that a request sent again writes nothing and answers {outcome: "repeated",
    // request: <the record>}; created in the procedure's transaction, by `remember` with the
    // answer, or by `remembered` before what comes next.
    function firstTime(proceed) {
        if (!request) {
            proceed();
            return;
        }
        if (request.type !== "request" || request.postId !== postId || typeof request.id !== "string") {
            throw new Error(procedure + ": the request record must have an id, type 'request' and postId '" + postId + "'");
        }
        accepted(collection.readDocument(collection.getAltLink() + "/docs/" + request.id, function (err, first) {
            if (err && err.number === 404) {
                proceed();
                return;
            }
            if (err) throw err;
            response.setBody({ outcome: "repeated", request: first });
        }));
    }

    // Creates the request record last, with the answer.
    function remember(answer) {
        remembered(function () { response.setBody(answer); });
    }

    // Creates the request record, then goes on.
    function remembered(proceed) {
        if (!request) {
            proceed();
            return;
        }
        accepted(collection.createDocument(collection.getSelfLink(), request, function (err) {
            // The same request, sent twice at once, committed first: this one writes nothing.
            // Thrown with its number (IN_PROGRESS in src/scripts/mod.rs), which Cosmos DB answers
            // as the 400's substatus: the caller tells it apart by that, not by the message.
            if (err && err.number === 409) throw new Error(4090, procedure + ": a request with this key is in progress");
            if (err) throw err;
            proceed();
        }));
    }

    function accepted(isAccepted) {
        if (!isAccepted) throw new Error(procedure + ": the database did not accept the operation; nothing was written");
    }
