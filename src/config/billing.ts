import { group } from './define';

export const billingSettings = group('Billing and metering', {
});
