/** The one version string of svc: served by /health and the capabilities document. */
export const SVC_VERSION = '4.4.1';
