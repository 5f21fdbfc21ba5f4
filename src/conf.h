/*
 * conf.h -- the configuration snapshot.
 *
 * conf_load() reads a JSON file with jansson (duplicate keys rejected),
 * validates every key against a table (unknown keys are errors), fills in
 * defaults, and returns an immutable snapshot.  The daemon holds one snapshot
 * at a time and swaps it whole on reload; nothing edits a loaded conf.
 *
 * The struct is public because it is plain data read by many modules; it is
 * never written after conf_load() returns.  docs/conf.md is the reference.
 */
#ifndef INGRESSD_CONF_H
#define INGRESSD_CONF_H

#include <stddef.h>

#include "realip.h"

#define CONF_MAX_WORKERS	64

struct conf_limits {
	size_t		 max_request_line;	/* 414 beyond */
	size_t		 max_header_bytes;	/* 431 beyond */
	unsigned	 max_headers;		/* 431 beyond */
	size_t		 max_body;		/* 413 beyond */
	unsigned	 max_connections;	/* refused beyond */
	unsigned	 max_connections_per_client; /* per address; 0: none */
};

/* The HTTP/2 front edge (h2.c): SETTINGS we send and flood limits. */
struct conf_http2 {
	unsigned	 max_concurrent_streams;	/* SETTINGS; refused beyond */
	size_t		 max_header_list_size;	/* SETTINGS; 431 beyond */
	unsigned	 initial_window_size;	/* per stream, request bytes */
	unsigned	 max_continuations;	/* per header block */
	unsigned	 max_resets_per_second;	/* client RST_STREAMs */
	unsigned	 max_control_per_second; /* PING and SETTINGS frames */
};

/* All in seconds. */
struct conf_timeouts {
	double		 header;	/* client header read (408) */
	double		 body;		/* client body read, between bytes (408) */
	double		 keepalive;	/* idle client connection */
	double		 request;	/* whole upstream request (504) */
	double		 connect;	/* replica connect + HELLO + PONG */
	double		 queue;		/* wait for a ready replica (503) */
	double		 ping_interval;	/* idle replica connections are pinged */
	double		 drain;		/* graceful stop */
	double		 worker_stall;	/* a worker's loop stuck this long:
					 * logged (with the inproc module) */
};

/* A TLS listener (listen entry's "tls"); docs/conf.md. */
enum conf_verify { CONF_VERIFY_OFF, CONF_VERIFY_OPTIONAL, CONF_VERIFY_REQUIRE };

struct conf_tls_cert {
	char		*cert;		/* PEM chain, leaf first */
	char		*key;		/* PEM private key */
};

struct conf_tls {
	struct conf_tls_cert *certs;	/* [0] is the default (no SNI match) */
	unsigned	 ncerts;
	char		**alpn;		/* server's preference order */
	unsigned	 nalpn;
	char		*ciphers;	/* TLS 1.2 list; NULL: the default */
	char		*ciphersuites;	/* TLS 1.3 list; NULL: the default */
	char		*min_version;	/* "TLSv1.2" (default) or "TLSv1.3" */
	char		*client_ca;	/* PEM CA file for client certificates */
	enum conf_verify verify_client;
	double		 handshake_timeout;
	int		 session_tickets;
};

/* A deployment's replicas over TLS (TCP endpoints only): the wire, HTTP
 * ("http") or HTTP/2 ("h2"). */
struct conf_upstream_tls {
	char		*ca;		/* verify the replica with this CA */
	char		*cert;		/* and present this (mutual TLS) */
	char		*key;
	char		*server_name;	/* SNI and the name checked */
};

/* Where a route finds the deployment's name. */
enum conf_route_from {
	CONF_FROM_CONF,			/* "deployment": fixed in the conf */
	CONF_FROM_PATH,			/* the path segment after the prefix */
	CONF_FROM_HEADER,		/* a request header's value */
};

struct conf_route {
	char		*host;		/* NULL: any host */
	char		*prefix;	/* path prefix, matched on '/' boundaries */
	size_t		 prefix_len;
	char		*deployment;	/* CONF_FROM_CONF only, else NULL */
	int		 strip_prefix;	/* forward the path without the prefix */
	enum conf_route_from from;
	char		*from_header;	/* CONF_FROM_HEADER: lower case */
	size_t		 from_header_len;
};

/* Access log line formats. */
enum conf_access_format {
	CONF_ACCESS_COMBINED,		/* Apache/nginx "combined" + extras */
	CONF_ACCESS_JSON,		/* one JSON object per line */
};

enum conf_source {
	CONF_SPAWN,			/* ingressd runs the replicas */
	CONF_ENDPOINTS,			/* a static list of addresses */
	CONF_DNS,			/* every address of a DNS name */
	CONF_DNS_SRV,			/* every target of a DNS SRV name */
	CONF_INPROC,			/* a module loaded into each worker */
};

/* How ingressd speaks to the replicas (their upstream edge, upconn.h). */
enum conf_protocol {
	CONF_PROTO_WIRE,		/* ingressd's wire protocol (default) */
	CONF_PROTO_HTTP,		/* plain HTTP/1.1 servers */
	CONF_PROTO_H2C,			/* HTTP/2 servers, cleartext */
	CONF_PROTO_H2,			/* HTTP/2 servers over TLS ("tls") */
};

/* protocol http only: active and passive health, keep-alive pool. */
struct conf_http {
	char		*health_path;	/* NULL: no active check */
	double		 health_interval; /* seconds between checks */
	double		 health_timeout;  /* a check's answer within */
	double		 idle_timeout;	/* keep-alive connection kept idle */
	unsigned	 max_5xx;	/* this many 5xx in a row: out; 0 off */
	int		 retry_idempotent; /* resend an idempotent request once
					 * when a reused connection fails
					 * before any response byte */
};

/* source inproc: the module (replica_module.h) and its args. */
struct conf_inproc {
	char		*module;	/* path as written in the conf */
	char		**args;		/* NULL-terminated */
	unsigned	 nargs;
	char		 file[96];	/* the file's identity at load
					 * ("dev:ino:mtime:size"): a rebuilt
					 * module is another endpoint */
};

/* endpoints: an entry's share of the deployment (its object form). */
struct conf_share {
	unsigned	 weight;	/* 1..65535 (default 1) */
	unsigned	 priority;	/* 0..65535, lower preferred (0) */
};

struct conf_deployment {
	char		*name;
	enum conf_source source;
	enum conf_protocol protocol;
	struct conf_http http;
	char		**command;	/* spawn: argv, NULL-terminated */
	unsigned	 replicas;	/* spawn: how many */
	char		**endpoints;	/* endpoints: "host:port" or "unix:/path" */
	struct conf_share *shares;	/* endpoints: [nendpoints] */
	unsigned	 nendpoints;
	char		*dns;		/* dns: "name:port"; dns_srv: the
					 * SRV name "_svc._tcp.name" */
	struct conf_inproc inproc;	/* inproc only */
	unsigned	 max_ongoing;	/* per replica; caps the replica's HELLO */
	unsigned	 queue_max;	/* requests waiting for a replica */
	double		 queue_timeout;	/* seconds; 0: conf timeouts.queue */
	double		 request_timeout; /* seconds; 0: conf timeouts.request */
	int		 prewarm;	/* resolve and warm at start */
	struct conf_upstream_tls *tls;	/* NULL: plain */
};

/* registry.etcd: the fleet's shared registry (src/etcd.c); off when
 * nendpoints is 0. */
struct conf_etcd {
	char		**endpoints;	/* "127.0.0.1:2379" (the scheme cut) */
	unsigned	 nendpoints;
	int		 https;		/* every endpoint is https:// */
	struct conf_upstream_tls *tls;	/* with https: CA, client cert */
	char		*username;	/* NULL: no etcd auth */
	char		*password;	/* read from password_file */
	char		*prefix;	/* "/ingressd": no trailing '/' */
	char		*snapshot;	/* last known set; NULL: none */
	double		 watch_timeout;	/* no event nor progress: dead */
	double		 request_timeout; /* range, txn */
};

struct conf {
	char		*path;
	char		**listen;	/* "host:port" or "unix:/path" */
	unsigned	 nlisten;
	struct conf_tls	**listen_tls;	/* per listen[i]; NULL: plain */
	char		*admin;		/* NULL: no admin listener */
	struct conf_tls	*admin_tls;	/* admin's "tls"; NULL: plain */
	unsigned	 workers;	/* 1..CONF_MAX_WORKERS ("auto" = cores) */
	char		*runtime_dir;	/* spawned replicas' sockets; NULL: default */
	char		*log_level;	/* "debug", "info", "warn" */
	struct conf_limits limits;
	struct conf_timeouts timeouts;
	struct conf_http2 http2;
	struct conf_route *routes;
	unsigned	 nroutes;
	struct conf_deployment *deployments;
	unsigned	 ndeployments;
	char		*error_log;	/* NULL: stderr; else an absolute path */
	char		*access_log;	/* NULL: off; "stderr" or a path */
	enum conf_access_format access_log_format;
	double		 handle_idle_ttl; /* seconds; 0: handles never expire */
	char		**nameservers;	/* resolver.nameservers; NULL: the
					 * system's (/etc/resolv.conf) */
	unsigned	 nnameservers;
	double		 srv_interval;	/* resolver.srv_interval: seconds
					 * between dns_srv lookups */
	int		 admin_on_public; /* admin pages on public listeners */
	char		*admin_token;	/* admin_token_file's token; NULL: none */
	struct realip_cidr *trusted_proxies; /* X-Forwarded-For is believed */
	unsigned	 ntrusted_proxies;   /* from these peers only */
	struct conf_etcd etcd;		/* registry.etcd */
};

/*
 * Load and validate.  On failure returns NULL and writes one line to err:
 * "FILE:LINE:COLUMN: message" for JSON syntax, "FILE: key.path: message"
 * for a wrong value or an unknown key.
 */
struct conf	*conf_load(const char *path, char *err, size_t errlen);
void		 conf_free(struct conf *);
const struct conf_deployment *conf_find_deployment(const struct conf *,
		    const char *name);

#endif
