// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Debian's libmicrohttpd is built with HTTPS, so its archive calls GnuTLS,
 * whose own archive needs libraries Debian ships no archive of (p11-kit).
 * The agent serves plain HTTP on 127.0.0.1 (MHD_USE_TLS is never asked
 * for): in the static memtrace these stand in for GnuTLS, each failing
 * (GNUTLS_E_INTERNAL_ERROR) but the library's global setup, which
 * libmicrohttpd runs at load. Built only into a static memtrace (MEMTRACE_NO_TLS);
 * a dynamic one links the real library.
 */
#ifdef MEMTRACE_NO_TLS
#include <stdlib.h>

#define FAIL -59 /* GNUTLS_E_INTERNAL_ERROR */

int gnutls_global_init(void);
void gnutls_global_deinit(void);
int gnutls_global_init(void) { return 0; }
void gnutls_global_deinit(void) {}
void *(*gnutls_malloc)(size_t) = malloc;

#define STUB(name) int name(void); int name(void) { return FAIL; }
STUB(gnutls_alpn_set_protocols)
STUB(gnutls_bye)
STUB(gnutls_certificate_allocate_credentials)
STUB(gnutls_certificate_free_credentials)
STUB(gnutls_certificate_server_set_request)
STUB(gnutls_certificate_set_dh_params)
STUB(gnutls_certificate_set_retrieve_function2)
STUB(gnutls_certificate_set_retrieve_function3)
STUB(gnutls_certificate_set_x509_key_mem)
STUB(gnutls_certificate_set_x509_key_mem2)
STUB(gnutls_certificate_set_x509_trust_mem)
STUB(gnutls_cipher_get)
STUB(gnutls_credentials_set)
STUB(gnutls_deinit)
STUB(gnutls_dh_params_deinit)
STUB(gnutls_dh_params_import_pkcs3)
STUB(gnutls_dh_params_init)
STUB(gnutls_handshake)
STUB(gnutls_init)
STUB(gnutls_priority_deinit)
STUB(gnutls_priority_init)
STUB(gnutls_priority_set)
STUB(gnutls_protocol_get_version)
STUB(gnutls_psk_allocate_server_credentials)
STUB(gnutls_psk_free_server_credentials)
STUB(gnutls_psk_set_server_credentials_function)
STUB(gnutls_record_check_pending)
STUB(gnutls_record_get_direction)
STUB(gnutls_record_recv)
STUB(gnutls_record_send)
STUB(gnutls_session_get_ptr)
STUB(gnutls_session_set_ptr)
STUB(gnutls_strerror)
STUB(gnutls_transport_set_int2)
#endif
