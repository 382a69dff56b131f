// svc billing page: completes a payment (or card set-up) created by the API, with Stripe.js.
// The client secret arrives in the URL fragment (#client_secret=...), which browsers never send
// to a server, so it stays out of access logs.
const $ = (id) => document.getElementById(id);
const body = document.body;

function say(text, kind) {
  const m = $('message');
  m.textContent = text;
  m.className = kind || '';
}

function fragment() {
  const p = new URLSearchParams(location.hash.replace(/^#/, ''));
  return { secret: p.get('client_secret') || '', mode: p.get('mode') === 'setup' ? 'setup' : 'payment' };
}

/** pi_123_secret_abc → pi_123 (the intent id is the part before "_secret_"). */
function intentIdOf(secret) {
  const i = secret.indexOf('_secret_');
  return i > 0 ? secret.slice(0, i) : '';
}

function loadStripeJs(src, timeoutMs) {
  return new Promise((resolve, reject) => {
    if (window.Stripe) return resolve(window.Stripe);
    const s = document.createElement('script');
    const timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
    s.src = src;
    s.async = true;
    s.onload = () => { clearTimeout(timer); window.Stripe ? resolve(window.Stripe) : reject(new Error('no Stripe global')); };
    s.onerror = () => { clearTimeout(timer); reject(new Error('network')); };
    document.head.appendChild(s);
  });
}

async function main() {
  const { secret, mode } = fragment();
  const id = intentIdOf(secret);
  if (!id) {
    $('intent').textContent = 'No payment to complete.';
    say('Open this page with the billing_page_url returned by POST /v1/billing/credits/checkout or /v1/billing/setup.', 'error');
    return;
  }
  $('intent').textContent = mode === 'setup' ? `Card set-up ${id}` : `Payment ${id}`;
  $('intent').dataset.intentId = id;

  let config;
  try {
    const res = await fetch(body.dataset.configUrl, { headers: { accept: 'application/json' } });
    config = await res.json();
  } catch {
    say('Could not read the billing configuration from svc. Reload the page to try again.', 'error');
    return;
  }
  if (!config.publishable_key) {
    say('Billing is not configured on this svc host, so no payment can be taken here.', 'error');
    return;
  }

  let StripeCtor;
  try {
    StripeCtor = await loadStripeJs(body.dataset.stripeJs, 10000);
  } catch {
    say('Stripe.js could not be loaded from js.stripe.com, so card payment cannot start. ' +
      'Check the network connection or any content blocker and reload. Nothing has been charged.', 'error');
    body.dataset.stripeJs = 'unavailable';
    return;
  }

  const stripe = StripeCtor(config.publishable_key);
  if (mode === 'payment') {
    const { paymentIntent, error } = await stripe.retrievePaymentIntent(secret);
    if (error) return say(error.message, 'error');
    $('amount').textContent = `${(paymentIntent.amount / 100).toFixed(2)} ${paymentIntent.currency.toUpperCase()}`;
    if (paymentIntent.status === 'succeeded') return say('This payment is already complete. Credits appear shortly.', 'ok');
  }
  const elements = stripe.elements({ clientSecret: secret });
  elements.create('payment').mount('#payment-element');
  const form = $('pay-form');
  form.hidden = false;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('pay-button').disabled = true;
    const confirm = mode === 'setup' ? stripe.confirmSetup : stripe.confirmPayment;
    const { error } = await confirm.call(stripe, { elements, confirmParams: { return_url: location.href.split('#')[0] + '#done' } });
    if (error) {
      say(error.message, 'error');
      $('pay-button').disabled = false;
    }
  });
}

if (location.hash === '#done') {
  $('intent').textContent = 'Thank you.';
  say('Payment submitted. Your credits are added as soon as the payment processor confirms it.', 'ok');
} else {
  main();
}
