// The Cosmos DB server-side JavaScript API (getContext(), __, ErrorCodes, the collection,
// request and response objects), as the wrapper Azure/azure-cosmosdb-js-server
// utils/DocDbWrapperScript.js describes it, over one native function:
// host(kind, payloadJson) -> replyJson, which performs an operation on the run's overlay.
// Argument checks throw here, synchronously, as the wrapper's do; what the database decides
// (404, 409, 412, bad SQL...) arrives in the callback, as on Cosmos DB.
// Evaluates to install(host, setupJson) -> { invoke, drain, body }.
(function (host, setupJson) {
  "use strict";
  var parse = JSON.parse, stringify = JSON.stringify;
  var setup = parse(setupJson);
  var queue = [], head = 0;
  var NativeError = Error;

  // Cosmos DB's engine takes the JScript form new Error(number, message); QuickJS would make
  // the number the message. One argument keeps the standard behaviour.
  function CosmosError(number, message) {
    var numbered = typeof number === "number" && arguments.length > 1;
    var args = numbered ? [message] : Array.prototype.slice.call(arguments);
    var error = Reflect.construct(NativeError, args, new.target || CosmosError);
    if (numbered) error.number = number;
    return error;
  }
  CosmosError.prototype = NativeError.prototype;
  function fail(number, message) { return new CosmosError(number, message); }

  var ErrorCodes = Object.freeze({ BadRequest: 400, Forbidden: 403, NotFound: 404, Conflict: 409,
    PreconditionFailed: 412, RequestEntityTooLarge: 413, RetryWith: 449, InternalServerError: 500 });

  // A database error as a callback receives it: number, and the response body as message.
  function storeError(e) {
    var body = stringify({ Errors: [e.message] });
    var error = new NativeError(body);
    error.number = e.status;
    error.body = body;
    return error;
  }

  function arity(name, args, least) {
    if (args.length < least) {
      throw fail(400, 'The function "' + name + '" requires at least ' + least +
        " argument(s) but was called with " + args.length + " argument(s).");
    }
  }

  // (options, callback) where options may be left out (DocDbWrapperScript validateOptionsAndCallback).
  function optionsAndCallback(options, callback) {
    var result = { options: options, callback: undefined };
    if (options === undefined) result.options = {};
    else if (callback === undefined && typeof options === "function") {
      result.callback = options;
      result.options = {};
    } else if (typeof options !== "object") {
      throw fail(400, 'The "options" parameter must be of type "object". Actual type is: "' + typeof options + '".');
    }
    if (callback !== undefined && typeof callback !== "function") {
      throw fail(400, 'The "callback" parameter must be of type "function". Actual type is: "' + typeof callback + '".');
    }
    if (typeof callback === "function") result.callback = callback;
    return result;
  }

  function collectionLink(link) {
    var segments = typeof link === "string" ? link.split("/") : [];
    if (segments.length < 4 || segments.length > 5 || (segments.length === 5 && segments[4] !== "") ||
        segments[0].toLowerCase() !== "dbs" || segments[2].toLowerCase() !== "colls") {
      throw fail(400, 'Invalid collection link: "' + link + '".');
    }
    if (link !== setup.selfLink && link !== setup.altLink) {
      throw fail(400, 'Function is not allowed to operate on resources outside current collection. ' +
        'Make sure that the link provided, "' + link + '", belongs to current collection.');
    }
  }

  // A document link: by _rid under getSelfLink(), or by id under getAltLink().
  function documentLink(link) {
    var segments = typeof link === "string" ? link.split("/") : [];
    if (segments.length < 6 || segments.length > 7 || (segments.length === 7 && segments[6] !== "") ||
        segments[0].toLowerCase() !== "dbs" || segments[2].toLowerCase() !== "colls" ||
        segments[4].toLowerCase() !== "docs") {
      throw fail(400, 'Invalid document link: "' + link + '".');
    }
    var prefix = segments.slice(0, 4).join("/");
    if (prefix + "/" === setup.selfLink) return { rid: segments[5] };
    if (prefix === setup.altLink) return { id: segments[5] };
    throw fail(400, 'Function is not allowed to operate on resources outside current collection. ' +
      'Make sure that the link provided, "' + link + '", belongs to current collection.');
  }

  function documentBody(body) {
    if (body === null || (typeof body !== "object" && typeof body !== "string")) {
      throw fail(400, "The document body must be an object or a string representing a JSON-serialized object.");
    }
  }

  // Performs the operation now; queues its completion, which calls the callback or, without
  // one, throws the error (an uncaught exception: the run fails).
  function perform(kind, payload, callback, args) {
    var reply = parse(host(kind, stringify(payload)));
    if (reply.stop) throw new NativeError(reply.stop);
    if (!reply.accepted) return false;
    var error = reply.error ? storeError(reply.error) : undefined;
    if (callback) queue.push({ fn: callback, args: error ? [error] : args(reply) });
    else if (error) queue.push({ fn: function () { throw error; }, args: [] });
    return true;
  }

  function resource(reply) { return [undefined, reply.result, {}]; }

  function write(kind, name, args, link, body, least) {
    arity(name, args, least);
    var payload = { options: {} };
    if (kind === "create" || kind === "upsert") {
      documentBody(body);
      collectionLink(link);
    } else {
      payload.target = documentLink(link);
    }
    var oc = optionsAndCallback(args[2], args[3]);
    var generateId = kind !== "replace" && oc.options.disableAutomaticIdGeneration !== true;
    // The wrapper parses a string body itself when it may have to give it an id.
    if (generateId && typeof body === "string") body = parse(body);
    payload.document = typeof body === "object" ? stringify(body) : body;
    if (typeof oc.options.etag === "string" && kind !== "create") payload.options.etag = oc.options.etag;
    payload.options.generateId = generateId;
    return perform(kind, payload, oc.callback, resource);
  }

  function Collection() {
    this.getSelfLink = function () { return setup.selfLink; };
    this.getAltLink = function () { return setup.altLink; };
    this.readDocument = function (link, options, callback) {
      arity("readDocument", arguments, 1);
      var target = documentLink(link);
      var oc = optionsAndCallback(options, callback);
      var payload = { target: target, options: {} };
      if (oc.options.ifNoneMatch) payload.options.ifNoneMatch = String(oc.options.ifNoneMatch);
      return perform("read", payload, oc.callback, function (reply) {
        return reply.notModified ? [undefined, undefined, { notModified: true }] : resource(reply);
      });
    };
    this.queryDocuments = function (link, filterQuery, options, callback) {
      arity("queryDocuments", arguments, 2);
      collectionLink(link);
      if (typeof filterQuery !== "string" && typeof filterQuery !== "object") {
        throw fail(400, 'The "filterQuery" parameter must be of type "string" or "object". Actual type is: "' +
          typeof filterQuery + '".');
      }
      var oc = optionsAndCallback(options, callback);
      var spec = typeof filterQuery === "string" ? { query: filterQuery } : filterQuery || {};
      var payload = { query: spec.query, parameters: spec.parameters || [],
        pageSize: oc.options.pageSize || 100, continuation: oc.options.continuation || "" };
      return perform("query", payload, oc.callback, function (reply) {
        return [undefined, reply.result, { continuation: reply.continuation }];
      });
    };
    this.createDocument = function (link, body) { return write("create", "createDocument", arguments, link, body, 2); };
    this.upsertDocument = function (link, body) { return write("upsert", "upsertDocument", arguments, link, body, 2); };
    this.replaceDocument = function (link, body) { return write("replace", "replaceDocument", arguments, link, body, 2); };
    this.deleteDocument = function (link, options, callback) {
      arity("deleteDocument", arguments, 1);
      var target = documentLink(link);
      var oc = optionsAndCallback(options, callback);
      var payload = { target: target, options: {} };
      if (typeof oc.options.etag === "string") payload.options.etag = oc.options.etag;
      // A delete's callback gets (err, responseOptions): there is no resource.
      return perform("delete", payload, oc.callback, function () { return [undefined, {}]; });
    };
  }

  // Request and response: a get<Key> per property, set<Key>/append<Key> for writable ones, and
  // getValue/setValue/appendValue by name (DocDbWrapperScript DocDbMap).
  function PropertyMap(properties) {
    var self = this, anyWritable = false;
    function property(name, forWrite) {
      var pair = properties[name];
      if (forWrite && pair === undefined) throw fail(400, "Cannot set new values: " + name);
      if (forWrite && !pair.writable) throw fail(403, "Not a writable property: " + name);
      return pair;
    }
    function get(name) { return name === undefined ? undefined : property(name, false).value; }
    function set(name, value) { if (name !== undefined) property(name, true).value = value; }
    function append(name, value) {
      if (name === undefined) return;
      var pair = property(name, true);
      pair.value = typeof pair.value === "string" || (pair.value !== null && pair.value !== undefined)
        ? pair.value + value : value;
    }
    Object.keys(properties).forEach(function (name) {
      self["get" + name] = function () { return get(name); };
      if (properties[name].writable) {
        anyWritable = true;
        self["set" + name] = function (value) { set(name, value); };
        self["append" + name] = function (value) { append(name, value); };
      }
    });
    this.getValue = get;
    if (anyWritable) {
      this.setValue = set;
      this.appendValue = append;
    }
  }

  var trigger = setup.trigger;
  var requestProperties = { Body: { value: trigger ? trigger.body : setup.args, writable: false } };
  if (trigger) requestProperties.OperationType = { value: trigger.operationType, writable: false };
  var responseBody = { value: trigger ? trigger.stored : undefined, writable: true };
  var request = new PropertyMap(requestProperties);
  var response = new PropertyMap({ Body: responseBody });
  var collection = new Collection();
  var context = {
    getCollection: function () { return collection; },
    getRequest: function () { return request; },
    getResponse: function () { return response; },
    // Rolls the run back even where an exception cannot (inside a promise callback).
    abort: function (err) {
      host("abort", stringify({ message: err && err.message !== undefined ? String(err.message) : String(err) }));
      throw new NativeError("aborted");
    }
  };

  var global = globalThis;
  global.Error = CosmosError;
  global.ErrorCodes = ErrorCodes;
  global.getContext = function () { return context; };
  global.__ = Object.create(collection);
  global.__.request = request;
  global.__.response = response;
  global.console = { log: function () {} };

  return {
    invoke: function (fn, argsJson) { fn.apply(undefined, parse(argsJson)); },
    drain: function () {
      while (head < queue.length) {
        var job = queue[head];
        queue[head++] = undefined;
        job.fn.apply(collection, job.args);
      }
      queue.length = 0;
      head = 0;
    },
    body: function () { return responseBody.value === undefined ? undefined : stringify(responseBody.value); }
  };
})
