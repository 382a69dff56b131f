import { Type } from 'typebox';
import { MAX_PURCHASE_CREDITS } from './pricing';

export const CheckoutBody = Type.Object({
  credits: Type.Integer({ minimum: 1, maximum: MAX_PURCHASE_CREDITS, description: 'Whole credits to buy (1 credit = 0.01 USD); at least 50' }),
}, { additionalProperties: false });

export const AutoTopupBody = Type.Object({
  enabled: Type.Boolean(),
  threshold_credits: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PURCHASE_CREDITS, description: 'Refill when the balance falls under this many credits' })),
  topup_credits: Type.Optional(Type.Integer({ minimum: 50, maximum: MAX_PURCHASE_CREDITS, description: 'Credits bought per refill (slider rate applies)' })),
}, { additionalProperties: false });

export const SetupBody = Type.Optional(Type.Object({}, { additionalProperties: false }));

export const CheckoutValidationCodes = {
  'body.credits': { status: 422, code: 'INVALID_CREDIT_AMOUNT', message: `credits must be a whole number from 50 to ${MAX_PURCHASE_CREDITS}` },
};
